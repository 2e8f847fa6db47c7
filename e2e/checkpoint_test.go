package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/store"
)

// TestSignedCheckpoints (issue 32, item 7) through the real binary:
// `audit seal --keygen` makes a key pair outside the state directory
// (one inside is refused), `audit seal --key` signs the chain's head
// while aqlguard runs and after it stopped, and `audit verify --key PUB`
// passes on the state and on an export. Then someone with write access
// to the state directory rewrites one record and re-chains the whole log
// with the store's own code: plain `audit verify` passes (that is the
// attack), `audit verify --key` fails naming the first checkpoint after
// the change, and `audit seal --key` refuses to sign the rewritten
// history. Another key finds no checkpoint of its own.
func TestSignedCheckpoints(t *testing.T) {
	g := startGuard(t, `
mode = "all"
agent = "sealer"

[safety]
auto_approve = ["ts.echo"]

[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
`)
	keys := t.TempDir()
	key, pub := filepath.Join(keys, "audit.key"), filepath.Join(keys, "audit.key.pub")
	inside := filepath.Join(stateDir(g.dir), "audit.key")
	if out, errOut, code := admin(t, g, "audit", "seal", "--keygen", inside); code != 1 || !strings.Contains(errOut, "inside the state directory") {
		t.Fatalf("a key inside the state directory: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := admin(t, g, "audit", "seal", "--keygen", key); code != 0 || !strings.Contains(out, "ed25519:") {
		t.Fatalf("keygen: exit %d\n%s%s", code, out, errOut)
	}
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the private key: %v %v", fi.Mode(), err)
	}
	for range 3 {
		if res := echo(t, g); res["success"] != true {
			t.Fatalf("a call: %s", jsonString(res))
		}
	}
	out, errOut, code := admin(t, g, "audit", "seal", "--key", key) // while aqlguard runs
	if code != 0 || !strings.Contains(out, "checkpoint signed by ed25519:") {
		t.Fatalf("seal --key: exit %d\n%s%s", code, out, errOut)
	}
	for range 2 {
		echo(t, g)
	}
	if err := g.stop(t); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code = admin(t, g, "audit", "seal", "--key", key); code != 0 || !strings.Contains(out, "1 earlier checkpoints of this key still hold") {
		t.Fatalf("the second seal: exit %d\n%s%s", code, out, errOut)
	}
	recs := auditRecords(t, g)
	var cps []uint64 // the checkpoints' own records
	for _, r := range recs {
		if r["kind"] == "checkpoint" {
			cps = append(cps, uint64(r["seq"].(float64)))
		}
	}
	if len(cps) != 2 {
		t.Fatalf("checkpoint records: %v", cps)
	}
	if out, errOut, code = admin(t, g, "audit", "verify", "--key", pub); code != 0 || !strings.Contains(out, "audit checkpoints verified: 2 signed by") {
		t.Fatalf("verify --key: exit %d\n%s%s", code, out, errOut)
	}
	export, _, _ := admin(t, g, "audit", "export")
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	writeFile(t, file, export)
	if out, errOut, code = aqlguardCLI(t, g.dir, "audit", "verify", "--key", pub, file); code != 0 || !strings.Contains(out, "2 signed by") {
		t.Fatalf("verify --key of an export (offline, the public key alone): exit %d\n%s%s", code, out, errOut)
	}
	other := filepath.Join(keys, "other.key")
	admin(t, g, "audit", "seal", "--keygen", other)
	if out, errOut, code = admin(t, g, "audit", "verify", "--key", other+".pub"); code != 1 || !strings.Contains(errOut, "no checkpoint signed by this key") {
		t.Fatalf("verify with another key: exit %d\n%s%s", code, out, errOut)
	}
	if err := os.Chmod(other, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code = admin(t, g, "audit", "seal", "--key", other); code != 1 || !strings.Contains(errOut, "may be read by others") {
		t.Fatalf("a private key others may read: exit %d\n%s%s", code, out, errOut)
	}

	// The rewrite: record 2 (under the first checkpoint) says another
	// operation, and the whole log is appended again, by the store, into
	// a state directory that takes the old one's place.
	edited := 2
	forged := filepath.Join(t.TempDir(), "forged")
	st, err := store.Open(context.Background(), forged, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(export) {
		var r store.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Seq == uint64(edited) {
			r.Operation, r.Decision = "nothing_to_see", "allow"
		}
		if err := st.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(stateDir(g.dir)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(forged, stateDir(g.dir)); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code = admin(t, g, "audit", "verify"); code != 0 {
		t.Fatalf("the rewritten chain should verify without the key (that is the attack): exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = admin(t, g, "audit", "verify", "--key", pub)
	want := "the checkpoint in record " + jsonString(cps[0]) + " (records 1 to " + jsonString(cps[0]-1)
	if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "was rewritten") {
		t.Fatalf("verify --key of the rewritten history: exit %d, want %q\n%s%s", code, want, out, errOut)
	}
	t.Logf("verify --key of the rewritten history says: %s", strings.TrimSpace(errOut))
	if out, errOut, code = admin(t, g, "audit", "seal", "--key", key); code != 1 || !strings.Contains(errOut, "nothing is signed") {
		t.Fatalf("seal --key of the rewritten history: exit %d\n%s%s", code, out, errOut)
	}
	export, _, _ = admin(t, g, "audit", "export")
	writeFile(t, file, export)
	if out, errOut, code = aqlguardCLI(t, g.dir, "audit", "verify", "--key", pub, file); code != 1 || !strings.Contains(errOut, want) {
		t.Fatalf("verify --key of the rewritten history's export: exit %d\n%s%s", code, out, errOut)
	}
}
