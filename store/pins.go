package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Pin is the approved definition of one downstream tool (tool pinning:
// a server that changes a tool after it was trusted is not believed until
// a human approves the change).
type Pin struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Hash is the SHA-256 of the approved definition's canonical form;
	// Definition is the tool as the server sent it then.
	Hash       string          `json:"hash"`
	Definition json.RawMessage `json:"definition"`
	FirstSeen  time.Time       `json:"first_seen"`
	ApprovedAt time.Time       `json:"approved_at"`
	// ApprovedBy says how: "first sight" (the configuration trusts it,
	// or it was pinned before first sights were reviewed), "profile" (a
	// shipped profile was made from it), "narrowed", "human", "admin <os
	// user>".
	ApprovedBy string `json:"approved_by"`
	// Reviewed says a human approved the tool as it is (at a first-sight
	// review or a change since; a narrowing keeps it): only then may the
	// server's own word about it inform the guard.
	Reviewed bool `json:"reviewed,omitempty"`
	// Pending is a changed definition waiting for a human, if any.
	Pending *PendingChange `json:"pending,omitempty"`
}

// PendingChange is a tool definition a server changed to.
type PendingChange struct {
	Hash       string          `json:"hash"`
	Definition json.RawMessage `json:"definition"`
	SeenAt     time.Time       `json:"seen_at"`
	// Review says the tool was seen at its server's first sight and
	// waits for the human's review of the server (listed meanwhile, but
	// not callable).
	Review bool `json:"review,omitempty"`
}

func pinKey(server, tool string) string { return server + "\x00" + tool }

// Pin returns the pin of a server's tool, or nil.
func (t *Tx) Pin(server, tool string) (*Pin, error) {
	return get[Pin](t, bucketPins, pinKey(server, tool))
}

// PutPin writes a pin.
func (t *Tx) PutPin(p Pin) error { return put(t, bucketPins, pinKey(p.Server, p.Tool), p) }

// DeletePin forgets a pin.
func (t *Tx) DeletePin(server, tool string) error { return del(t, bucketPins, pinKey(server, tool)) }

// Pins lists the pins of server ("" for every server), by server and tool.
func (t *Tx) Pins(server string) ([]Pin, error) {
	b, err := t.bucket(bucketPins)
	if err != nil {
		return nil, err
	}
	var out []Pin
	prefix := []byte(nil)
	if server != "" {
		prefix = []byte(server + "\x00")
	}
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var p Pin
		if err := json.Unmarshal(v, &p); err != nil {
			return nil, fmt.Errorf("state database: pin %q is damaged: %w", k, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// Clone is a copy of p that shares nothing with it: a pin kept in a
// snapshot is handed out as a clone, so that a caller changing its
// definition or its pending change changes nothing kept.
func (p Pin) Clone() Pin {
	p.Definition = bytes.Clone(p.Definition)
	if p.Pending != nil {
		pc := *p.Pending
		pc.Definition = bytes.Clone(pc.Definition)
		p.Pending = &pc
	}
	return p
}
