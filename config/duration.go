package config

import (
	"fmt"
	"time"
)

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration struct{ time.Duration }

// UnmarshalText accepts a Go duration string ("30s", "2m", "1h30m"). Bare
// numbers are rejected rather than guessed at: "30" could mean seconds or
// nanoseconds, and a timeout off by a factor of 10^9 fails silently.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return fmt.Errorf("invalid duration %q: use a Go duration such as \"30s\" or \"2m\"", text)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the canonical Go duration string, so a Config round-trips.
func (d Duration) MarshalText() ([]byte, error) {
	return []byte(d.Duration.String()), nil
}
