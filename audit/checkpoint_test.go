package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/store"
)

// chain is records 1..n with made-up hashes, and checkpoints put in by
// the test.
func chain(n int) []store.Record {
	var out []store.Record
	for i := 1; i <= n; i++ {
		out = append(out, store.Record{Seq: uint64(i), Kind: "decision", Hash: strings.Repeat(string(rune('a'+i%6)), 64)})
	}
	return out
}

func walk(recs []store.Record) func(fn func(store.Record) error) error {
	return func(fn func(store.Record) error) error {
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
}

// withCheckpoint appends a checkpoint record over record covers.
func withCheckpoint(recs []store.Record, key ed25519.PrivateKey, covers int, change func(*store.Checkpoint)) []store.Record {
	c := SignCheckpoint(key, "state-1", recs[covers-1], time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC))
	if change != nil {
		change(&c)
	}
	r := CheckpointRecord(c, "operator", "host/1")
	r.Seq, r.Hash = uint64(len(recs)+1), strings.Repeat("f", 64)
	return append(recs, r)
}

func TestVerifyCheckpoints(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	pub := key.Public().(ed25519.PublicKey)
	good := withCheckpoint(withCheckpoint(chain(5), key, 5, nil), key, 6, nil)
	tests := []struct {
		name     string
		recs     []store.Record
		record   uint64 // the checkpoint named (0: none)
		problem  string
		verified int
	}{
		{"two checkpoints that hold", good, 0, "", 2},
		{"another key's checkpoints beside", withCheckpoint(good, other, 3, nil), 0, "", 2},
		{"no checkpoint", chain(5), 0, "no checkpoint signed by this key", 0},
		{"only another key's", withCheckpoint(chain(5), other, 5, nil), 0, "signed by ed25519:", 0},
		{"the signed hash changed", withCheckpoint(chain(5), key, 5, func(c *store.Checkpoint) { c.Hash = strings.Repeat("0", 64) }),
			6, "signature does not verify", 0},
		{"the signed seq changed", withCheckpoint(chain(5), key, 5, func(c *store.Checkpoint) { c.Seq = 4 }), 6, "signature does not verify", 0},
		{"the time changed", withCheckpoint(chain(5), key, 5, func(c *store.Checkpoint) { c.Time = c.Time.Add(time.Hour) }),
			6, "signature does not verify", 0},
		{"a signature that does not read", withCheckpoint(chain(5), key, 5, func(c *store.Checkpoint) { c.Sig = "!!" }),
			6, "does not read", 0},
		{"a record rewritten under the checkpoint", func() []store.Record {
			r := withCheckpoint(chain(5), key, 5, nil)
			r[4].Hash = strings.Repeat("9", 64)
			return r
		}(), 6, "record 5 has hash 9999999999999999…, the checkpoint signed", 0},
		{"the first bad one is named", func() []store.Record {
			r := withCheckpoint(withCheckpoint(chain(3), key, 2, nil), key, 3, nil)
			r[2].Hash = strings.Repeat("9", 64) // record 3: under the second checkpoint only
			return r
		}(), 5, "record 3 has hash", 0},
		{"a checkpoint naming a record after it", func() []store.Record {
			r := withCheckpoint(chain(5), key, 5, nil)
			r[5].Seq = 5 // its own record numbered as the one it covers
			return r
		}(), 5, "does not come before it", 0},
		{"the record it signed is gone", func() []store.Record {
			r := withCheckpoint(chain(5), key, 5, nil)
			return append(r[:4:4], r[5])
		}(), 6, "record 5, whose hash it signed, is not in the log", 0},
		{"a checkpoint in a record of another kind", func() []store.Record {
			r := withCheckpoint(chain(5), key, 5, nil)
			r[5].Kind = "decision"
			return r
		}(), 6, `kind "decision"`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := VerifyCheckpoints(pub, walk(tt.recs))
			if tt.problem == "" {
				if err != nil || len(got.Verified) != tt.verified {
					t.Fatalf("%d verified, %v", len(got.Verified), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.problem) {
				t.Fatalf("err %v, want %q", err, tt.problem)
			}
			var bad *CheckpointError
			if tt.record == 0 {
				if !errors.Is(err, ErrNoCheckpoint) {
					t.Fatalf("want ErrNoCheckpoint: %v", err)
				}
			} else if !errors.As(err, &bad) || bad.Record != tt.record {
				t.Fatalf("want the checkpoint in record %d named: %v", tt.record, err)
			}
		})
	}
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.key")
	id, err := GenerateKey(path)
	if err != nil || !strings.HasPrefix(id, "ed25519:") {
		t.Fatal(id, err)
	}
	for p, mode := range map[string]os.FileMode{path: 0o600, path + ".pub": 0o644} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != mode {
			t.Fatalf("%s: %v %v", p, fi.Mode(), err)
		}
	}
	if _, err := GenerateKey(path); err == nil {
		t.Fatal("a key was written over an existing one")
	}
	priv, err := LoadSigningKey(path)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := LoadVerifyKey(path + ".pub")
	if err != nil || KeyID(pub) != id || !pub.Equal(priv.Public()) {
		t.Fatalf("the public key: %v", err)
	}
	// The private key given where the public one goes: refused, and
	// nothing of it in the error.
	raw, _ := os.ReadFile(path)
	_, err = LoadVerifyKey(path)
	body := strings.Split(string(raw), "\n")[1]
	if err == nil || strings.Contains(err.Error(), body) || strings.Contains(err.Error(), body[:12]) {
		t.Fatalf("a private key read as the public one: %v", err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSigningKey(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a private key the group may read: %v", err)
	}
	if _, err := LoadSigningKey(path + ".pub"); err == nil {
		t.Fatal("a public key loaded as the signing key")
	}
}

func TestOutsideState(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "state")
	os.MkdirAll(filepath.Join(state, "audit"), 0o700)
	os.MkdirAll(filepath.Join(root, "keys"), 0o700)
	os.Symlink(state, filepath.Join(root, "link-to-state"))
	os.Symlink(filepath.Join(root, "keys"), filepath.Join(state, "link-to-keys"))
	tests := []struct {
		key    string
		inside bool
	}{
		{filepath.Join(state, "k"), true},
		{filepath.Join(state, "audit", "k"), true},
		{filepath.Join(state, "new", "dir", "k"), true}, // not there yet
		{state, true},
		{filepath.Join(root, "link-to-state", "k"), true},
		{filepath.Join(root, "keys", "..", "state", "k"), true},
		{filepath.Join(root, "keys", "k"), false},
		{filepath.Join(root, "state2", "k"), false},        // a name that starts like it
		{filepath.Join(state, "link-to-keys", "k"), false}, // resolves outside
		{filepath.Join(root, "k"), false},
	}
	for _, tt := range tests {
		err := OutsideState(tt.key, state)
		if (err != nil) != tt.inside {
			t.Errorf("%s: %v, want inside %v", tt.key, err, tt.inside)
		}
	}
	if err := OutsideState(filepath.Join(state, "k"), ""); err != nil {
		t.Errorf("no state directory: %v", err)
	}
}

// TestCheckpointInOCSF: an OCSF export keeps the checkpoint whole, so a
// collector fed OCSF holds what a third party needs to check it.
func TestCheckpointInOCSF(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	recs := withCheckpoint(chain(2), key, 2, nil)
	ev := OCSF(recs[2], "test")
	un := ev["unmapped"].(map[string]any)
	if c, ok := un["checkpoint"].(*store.Checkpoint); !ok || c.Sig != recs[2].Checkpoint.Sig || ev["activity_name"] != "Signed Checkpoint" {
		t.Fatalf("OCSF event: %v", ev)
	}
}
