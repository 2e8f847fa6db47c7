package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestAuditExportOCSF: every record exports as an OCSF API Activity event
// that keeps the record's hash; filters select by agent and time.
func TestAuditExportOCSF(t *testing.T) {
	h := newHuman(t)
	h.answer(t, "deny")
	g := startGuard(t, defaultsConfig(t, h, ""))
	g.callAQL(t, "mcp_aql", "ts_delete_note", map[string]any{"id": "n1"})
	g.callAQL(t, "mcp_aql", "ts_delete_note", map[string]any{"id": "n2"})

	stored := auditRecords(t, g)
	out, errOut, code := admin(t, g, "audit", "export", "--format", "ocsf")
	if code != 0 {
		t.Fatalf("audit export --format ocsf: exit %d: %s", code, errOut)
	}
	events := jsonLines(t, out)
	if len(events) != len(stored) {
		t.Fatalf("%d events for %d records", len(events), len(stored))
	}
	for i, ev := range events {
		if ev["class_uid"] != float64(6003) || ev["category_uid"] != float64(6) {
			t.Errorf("event %d is not API Activity: %s", i, jsonString(ev))
		}
		if ev["type_uid"] != float64(600399) {
			t.Errorf("event %d type_uid %v", i, ev["type_uid"])
		}
		unmapped := ev["unmapped"].(map[string]any)
		if unmapped["hash"] != stored[i]["hash"] {
			t.Errorf("event %d lost the record's hash", i)
		}
		if _, ok := ev["time"].(float64); !ok {
			t.Errorf("event %d has no time", i)
		}
	}

	mine, _, _ := admin(t, g, "audit", "export", "--agent", "policy-agent")
	if n := len(jsonLines(t, mine)); n == 0 || n > len(stored) {
		t.Errorf("--agent policy-agent selected %d of %d", n, len(stored))
	}
	if other, _, _ := admin(t, g, "audit", "export", "--agent", "nobody"); other != "" {
		t.Errorf("--agent nobody selected records: %s", other)
	}
	if future, _, _ := admin(t, g, "audit", "export", "--since", time.Now().Add(time.Hour).Format(time.RFC3339)); future != "" {
		t.Errorf("--since an hour ahead selected records: %s", future)
	}
	if _, errOut, code := admin(t, g, "audit", "export", "--since", "yesterday"); code != 2 || !strings.Contains(errOut, "RFC 3339") {
		t.Errorf("a bad --since: exit %d: %s", code, errOut)
	}
}

// TestAuditTailFollows: tail -f prints the last records, then each new one
// as another process writes it.
func TestAuditTailFollows(t *testing.T) {
	h := newHuman(t)
	h.answer(t, "deny")
	g := startGuard(t, defaultsConfig(t, h, ""))
	g.callAQL(t, "mcp_aql", "ts_delete_note", map[string]any{"id": "n0"})

	cmd := exec.Command(bins.aqlguard, "audit", "tail", "-f", "-n", "1", "--config", g.config)
	cmd.Env = isolatedEnv(t, g.dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan map[string]any)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r map[string]any
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				lines <- r
			}
		}
		close(lines)
	}()
	next := func() map[string]any {
		select {
		case r, ok := <-lines:
			if !ok {
				t.Fatalf("tail -f ended: %s", errb.String())
			}
			return r
		case <-time.After(20 * time.Second):
			t.Fatalf("tail -f printed nothing: %s", errb.String())
		}
		return nil
	}
	first := next()
	g.callAQL(t, "mcp_aql", "ts_delete_note", map[string]any{"id": "n1"})
	for {
		r := next()
		if r["seq"].(float64) <= first["seq"].(float64) {
			t.Fatalf("tail -f went back: %v after %v", r["seq"], first["seq"])
		}
		if args, _ := r["args"].(map[string]any); args["id"] == "n1" {
			return
		}
	}
}

func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestAuditAnchorsCatchARewoundLog: what an agent running as the user
// can do to the audit log — cut its tail and rewind the head the
// database records — passes `audit verify`, and fails `audit verify
// --anchors-from` a copy of the anchors the system log kept. (This
// machine has no system log: the anchors are written here as aqlguard
// sends them, from the log before the attack.)
func TestAuditAnchorsCatchARewoundLog(t *testing.T) {
	h := newHuman(t)
	g := startGuard(t, blockingConfig(h))
	for range 5 {
		if res := echo(t, g); res["success"] != true {
			t.Fatalf("echo: %v", res)
		}
	}
	if err := g.stop(t); err != nil {
		t.Fatal(err)
	}
	vout, verr, code := admin(t, g, "audit", "verify")
	m := regexp.MustCompile(`\(state ([0-9a-f]{16})\)`).FindStringSubmatch(vout)
	if code != 0 || m == nil {
		t.Fatalf("audit verify: exit %d: %s%s", code, vout, verr)
	}
	recs := auditRecords(t, g)
	last := recs[len(recs)-1]
	anchors := filepath.Join(t.TempDir(), "syslog")
	writeFile(t, anchors, fmt.Sprintf("Nov 22 19:00:00 host aqlguard-audit[1]: aqlguard audit anchor state=%s segment=audit-00000001.jsonl seq=%.0f hash=%s\n",
		m[1], last["seq"], last["hash"]))
	if out, errOut, code := admin(t, g, "audit", "verify", "--anchors-from", anchors); code != 0 || !strings.Contains(out, "anchors verified") {
		t.Fatalf("verify --anchors-from on the untouched log: exit %d: %s%s", code, out, errOut)
	}

	// The attack: drop the last two records and rewind the head.
	seg := filepath.Join(filepath.Dir(dbPath(g.dir)), "audit", "audit-00000001.jsonl")
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	kept := strings.Join(lines[:len(lines)-2], "")
	var head struct {
		Seq  uint64 `json:"seq"`
		Hash string `json:"hash"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-3]), &head); err != nil {
		t.Fatal(err)
	}
	writeFile(t, seg, kept)
	db, err := bolt.Open(dbPath(g.dir), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(head)
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("audit_head"), raw) }); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	// The state marker beside the database keeps the log's head too, and
	// catches the cut on its own...
	if out, errOut, code := admin(t, g, "audit", "verify"); code == 0 || !strings.Contains(errOut, "were removed") {
		t.Fatalf("verify of a log cut below the state marker's head: exit %d: %s%s", code, out, errOut)
	}
	// ...but an agent that can cut the log can remove the marker as well:
	// then the log verifies as a chain (that is the attack).
	if err := os.Remove(filepath.Join(filepath.Dir(dbPath(g.dir)), "aqlguard.gen")); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := admin(t, g, "audit", "verify"); code != 0 {
		t.Fatalf("the rewound log should still verify as a chain (that is the attack): exit %d: %s%s", code, out, errOut)
	}
	out, errOut, code := admin(t, g, "audit", "verify", "--anchors-from", anchors)
	if code == 0 || !strings.Contains(errOut, "anchor") {
		t.Fatalf("verify --anchors-from on the rewound log: exit %d: %s%s", code, out, errOut)
	}
	t.Logf("caught: %s", strings.TrimSpace(errOut))
}
