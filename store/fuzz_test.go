package store

import (
	"bytes"
	"encoding/json"
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
		got, err := NewChainVerifier().Next(raw)
		if err != nil {
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
