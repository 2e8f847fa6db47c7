package store

import (
	"context"
	"testing"
)

// A database made before server names has no bucket for them: read
// only, it opens and holds none; the next process that writes makes it.
func TestServerNamesInADatabaseMadeBefore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Update(ctx, func(tx *Tx) error { return tx.tx.DeleteBucket(bucketServerNames) }); err != nil {
		t.Fatal(err)
	}
	st.Close()
	ro, err := Open(ctx, dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read only, without the bucket: %v", err)
	}
	var names []ServerNames
	if err := ro.Load(ctx, func(v View) (err error) { names, err = v.ServerNames(""); return }); err != nil || names != nil {
		t.Fatalf("ServerNames: %v %v", names, err)
	}
	if _, err := ro.Export(ctx, func(Changes) error { return nil }); err != nil {
		t.Fatalf("Export without the bucket: %v", err)
	}
	ro.Close()
	rw, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if _, err := rw.Commit(ctx, func(View) (Changes, error) {
		return Changes{ServerNames: []ServerNames{{Principal: "claude", Server: "fs", Tools: []string{"read"}}}}, nil
	}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := rw.Load(ctx, func(v View) (err error) { names, err = v.ServerNames("claude"); return }); err != nil || len(names) != 1 {
		t.Fatalf("ServerNames after a write: %v %v", names, err)
	}
}
