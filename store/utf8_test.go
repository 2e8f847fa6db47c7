package store

import (
	"context"
	"encoding/json"
	"testing"
)

// A record carrying bytes that are not UTF-8 (a server's error text, an
// OS message) verifies: it is hashed as a reader will decode and
// re-encode it, not as encoding/json's \ufffd escape of the raw bytes,
// which would read as a changed record (a false alarm of tampering).
func TestRecordNotUTF8Verifies(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	caller := []string{"ok", "bad \xff byte", "nul \x00"}
	r := Record{Time: t0, Kind: "outcome", Principal: "claude", Result: "error: \xc3\x28 not utf-8", Factors: caller,
		Args: json.RawMessage("{\"path\":\"/tmp/\xff\"}")}
	if err := s.Append(ctx, r); err != nil {
		t.Fatal(err)
	}
	if caller[1] != "bad \xff byte" {
		t.Error("the caller's factors were changed")
	}
	var n uint64
	if err := s.View(ctx, func(tx *Tx) (err error) { n, err = tx.VerifyChain(); return }); err != nil || n != 1 {
		t.Fatalf("VerifyChain: %d records, %v", n, err)
	}
}
