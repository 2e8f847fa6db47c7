package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// ServerNames are the names of the tools and prompts one server offered
// a principal's client when it last listed them. Each `aqlguard wrap` a
// client config runs knows only its own server, but the client shows
// the tools of all of them side by side; they share the state, and
// through these records each finds the names two of the client's servers
// claim (proxy/names), and the server names that pass for another's.
type ServerNames struct {
	Principal string `json:"principal"`
	Server    string `json:"server"`
	// Tools and Prompts are the names as the server listed them, sorted;
	// PromptsListed says Prompts were listed (a client that never lists
	// prompts leaves them unknown, not empty).
	Tools         []string `json:"tools"`
	Prompts       []string `json:"prompts,omitempty"`
	PromptsListed bool     `json:"prompts_listed,omitempty"`
	// Process is the process that recorded them (host/pid), SeenAt when.
	Process string    `json:"process"`
	SeenAt  time.Time `json:"seen_at"`
}

// Same reports whether n and o record the same names.
func (n ServerNames) Same(o ServerNames) bool {
	return n.Principal == o.Principal && n.Server == o.Server && slices.Equal(n.Tools, o.Tools) &&
		slices.Equal(n.Prompts, o.Prompts) && n.PromptsListed == o.PromptsListed
}

// serverNamesKey is a record's key: principal, NUL, server (a server's
// name holds no NUL, so the last one ends the principal).
func serverNamesKey(principal, server string) string { return principal + "\x00" + server }

// ServerNames lists the names recorded for principal's servers ("": every
// principal's), by principal and server. A database made before these
// records has none (read-only, its bucket is not made).
func (t *Tx) ServerNames(principal string) ([]ServerNames, error) {
	b := t.tx.Bucket(bucketServerNames)
	if b == nil {
		return nil, nil
	}
	var prefix []byte
	if principal != "" {
		prefix = []byte(principal + "\x00")
	}
	var out []ServerNames
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var n ServerNames
		if err := json.Unmarshal(v, &n); err != nil {
			return nil, fmt.Errorf("state database: server names %q are damaged: %w", k, err)
		}
		if principal == "" || n.Principal == principal { // not a longer principal with a NUL in it
			out = append(out, n)
		}
	}
	return out, nil
}

// PutServerNames writes a server's names (making their bucket in a
// database made before them).
func (t *Tx) PutServerNames(n ServerNames) error {
	if t.tx.Bucket(bucketServerNames) == nil {
		if _, err := t.tx.CreateBucket(bucketServerNames); err != nil {
			return fmt.Errorf("state database: creating bucket %s: %w", bucketServerNames, err)
		}
	}
	return put(t, bucketServerNames, serverNamesKey(n.Principal, n.Server), n)
}
