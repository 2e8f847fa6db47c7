package store

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Anchors put the audit log's head where the agent cannot rewrite it.
// An agent running as the same user can rewrite the whole chain
// consistently, or cut its tail and rewind the head the database
// records; the system log (journald, syslog) takes its messages but does
// not let a user take them back. So the log's head is sent there: when a
// segment closes, at most every AnchorInterval while records come, and
// when the store closes. `aqlguard audit verify --anchors` reads them
// back and checks that every anchored record is in the log as anchored.

// AnchorInterval bounds how long new records wait for an anchor.
const AnchorInterval = time.Minute

// anchorTag starts an anchor line, wherever the system log puts it.
const anchorTag = "aqlguard audit anchor "

// Anchor is one head sent to the system log.
type Anchor struct {
	State   string // the state directory's id (see Store.StateID)
	Segment string
	Seq     uint64
	Hash    string
}

func (a Anchor) String() string {
	return fmt.Sprintf("%sstate=%s segment=%s seq=%d hash=%s", anchorTag, a.State, a.Segment, a.Seq, a.Hash)
}

// ParseAnchors reads the anchors in r: any line that carries one, as the
// system log renders it (journalctl -o cat, a syslog file line).
func ParseAnchors(r io.Reader) ([]Anchor, error) {
	var out []Anchor
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		_, rest, ok := strings.Cut(sc.Text(), anchorTag)
		if !ok {
			continue
		}
		var a Anchor
		for _, field := range strings.Fields(rest) {
			k, v, _ := strings.Cut(field, "=")
			switch k {
			case "state":
				a.State = v
			case "segment":
				a.Segment = v
			case "seq":
				a.Seq, _ = strconv.ParseUint(v, 10, 64)
			case "hash":
				a.Hash = v
			}
		}
		if a.State != "" && a.Seq > 0 && len(a.Hash) == 64 {
			out = append(out, a)
		}
	}
	return out, sc.Err()
}

// VerifyAnchors checks the log against the anchors of this state
// directory: each anchored record must be there, with the anchored hash.
// It returns how many anchors it checked.
func (t *Tx) VerifyAnchors(anchors []Anchor) (int, error) {
	state, err := t.stateID()
	if err != nil {
		return 0, err
	}
	want := map[uint64]string{}
	for _, a := range anchors {
		if a.State != state {
			continue
		}
		if h, ok := want[a.Seq]; ok && h != a.Hash {
			return 0, fmt.Errorf("%w: the system log anchors record %d with two different hashes", ErrChainBroken, a.Seq)
		}
		want[a.Seq] = a.Hash
	}
	if len(want) == 0 {
		return 0, fmt.Errorf("no anchor of this state directory (%s) in the system log", state)
	}
	found := 0
	err = t.Records(0, func(r Record, _ []byte) error {
		h, ok := want[r.Seq]
		if !ok {
			return nil
		}
		if h != r.Hash {
			return fmt.Errorf("%w at record %d: it is not the record the system log anchored", ErrChainBroken, r.Seq)
		}
		found++
		return nil
	})
	if err != nil {
		return found, err
	}
	if found < len(want) {
		var last uint64
		for seq := range want {
			last = max(last, seq)
		}
		return found, fmt.Errorf("%w: the system log anchors records up to %d; %d of its %d anchored records are missing (the log was cut)",
			ErrChainBroken, last, len(want)-found, len(want))
	}
	return found, nil
}

var keyStateID = []byte("state_id")

// stateID is the state directory's random id, made when the database
// was: it tells this directory's anchors from another's on one machine.
func (t *Tx) stateID() (string, error) {
	b, err := t.bucket(bucketMeta)
	if err != nil {
		return "", err
	}
	if id := b.Get(keyStateID); len(id) > 0 {
		return string(id), nil
	}
	if !t.tx.Writable() {
		return "", fmt.Errorf("state database: no state id yet")
	}
	raw := make([]byte, 8)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	id := hex.EncodeToString(raw)
	if err := b.Put(keyStateID, []byte(id)); err != nil {
		return "", err
	}
	return id, nil
}
