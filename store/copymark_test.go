package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCopyMarkRefusesOpen (issue 32, item 2), on state directories
// alone: a copy stopped at a record boundary leaves its target marked;
// every Open refuses it (read-only and inspecting opens too) until
// --resume finished the copy, after which it opens and verifies.
func TestCopyMarkRefusesOpen(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	open := func(dir string, o Options) (*Store, error) { o.Timeout = 30 * time.Second; return Open(ctx, dir, o) }
	from, err := open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close()
	var c Changes
	for j := range 1500 {
		c.Records = append(c.Records, Record{Time: at, Kind: "decision", Principal: "claude", Result: fmt.Sprint("call ", j)})
	}
	if _, err := from.Commit(ctx, func(View) (Changes, error) { return c, nil }); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	to, err := open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer to.Close()
	stop := errors.New("stopped")
	if _, err := Copy(ctx, from, to, "alice", at, CopyOptions{AfterBatch: func(uint64) error { return stop }}); !errors.Is(err, stop) {
		t.Fatalf("the stopped copy: %v", err)
	}
	for _, o := range []Options{{}, {ReadOnly: true}, {Inspect: true}, {ReadOnly: true, Inspect: true}} {
		st, err := open(dir, o)
		var ic *IncompleteCopyError
		if !errors.As(err, &ic) || ic.Mark.Source != from.StateID() || ic.Mark.SourceHead.Seq != 1500 || !strings.HasPrefix(err.Error(), "incomplete copy: ") {
			if st != nil {
				st.Close()
			}
			t.Fatalf("Open %+v of a stopped copy's target: %v", o, err)
		}
	}
	if _, err := Copy(ctx, from, to, "alice", at, CopyOptions{Resume: true}); err != nil {
		t.Fatalf("--resume: %v", err)
	}
	st, err := open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("the finished copy: %v", err)
	}
	defer st.Close()
	if n, err := st.VerifyChain(ctx); err != nil || n != 1501 {
		t.Fatalf("the finished copy verifies %d records: %v", n, err)
	}
}
