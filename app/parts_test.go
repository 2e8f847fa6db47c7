package app

import (
	"slices"
	"testing"

	"github.com/aqlguard/aqlguard/audit/forward"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// TestEveryNameTheFileTakesIsRegistered: each value a kind key of the
// file may take (the lists policy validates against) has exactly one
// part registered under it in the process app assembles, and no part
// is registered under a name the file cannot take.
func TestEveryNameTheFileTakesIsRegistered(t *testing.T) {
	for _, c := range []struct {
		key        string
		file, have []string
	}{
		{"[state] backend", config.StateBackends, store.Backends()},
		{"[verify] channel", config.Channels, verify.Channels()},
		{"[audit.forward] to", config.ForwardDestinations, forward.Destinations()},
	} {
		file := slices.Sorted(slices.Values(c.file))
		if !slices.Equal(file, c.have) {
			t.Errorf("%s: the file takes %v, this build registers %v", c.key, file, c.have)
		}
	}
}
