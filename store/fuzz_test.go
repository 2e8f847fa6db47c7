package store

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzChainVerifier feeds arbitrary lines to the verifier that `aqlguard
// audit verify FILE` runs over an exported log (a file anyone may have
// edited). It must never panic, and it may accept a line only if it is
// exactly a first record whose hash covers every byte of it.
func FuzzChainVerifier(f *testing.F) {
	r := Record{Seq: 1, Time: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), Kind: "decision", Principal: "p",
		Operation: "op", Factors: []string{"f"}, Prev: GenesisHash, DurationMS: 0.5}
	r.Hash, _ = hashOf(r)
	good, _ := json.Marshal(r)
	f.Add(good)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"seq":1,"prev":"` + GenesisHash + `"}`))
	f.Add([]byte(`{"seq":1,"seq":2}`))
	f.Add(append(append([]byte(nil), good...), ` {"x":1}`...))
	f.Fuzz(func(t *testing.T, raw []byte) {
		v := NewChainVerifier()
		got, err := v.Next(raw)
		if err != nil || v.Finish() != nil {
			return
		}
		want, herr := hashOf(got)
		if got.Seq != 1 || got.Prev != GenesisHash || herr != nil || want != got.Hash {
			t.Fatalf("accepted a record that does not start the chain: %+v", got)
		}
		again, _ := json.Marshal(got)
		if string(again) != string(bytes.TrimSpace(raw)) {
			t.Fatalf("accepted bytes its hash does not cover:\n%q\n%q", raw, again)
		}
	})
}

// FuzzParseAnchors: the system log is written by anyone on the machine,
// so its anchor lines are untrusted: reading them never panics, and what
// is read is well formed.
func FuzzParseAnchors(f *testing.F) {
	f.Add("Nov 22 19:00:00 host aqlguard-audit[42]: aqlguard audit anchor state=0123456789abcdef segment=audit-00000001.jsonl seq=40 hash=" + strings.Repeat("ab", 32))
	f.Add("aqlguard audit anchor state= seq=-1 hash=x\naqlguard audit anchor seq=99999999999999999999999")
	f.Add("aqlguard audit anchor state=a=b=c seq=1 hash=" + strings.Repeat("0", 64) + " seq=2")
	f.Fuzz(func(t *testing.T, text string) {
		anchors, _ := ParseAnchors(strings.NewReader(text))
		for _, a := range anchors {
			if a.State == "" || a.Seq == 0 || len(a.Hash) != 64 {
				t.Fatalf("malformed anchor read: %+v", a)
			}
		}
	})
}
