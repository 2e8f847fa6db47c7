package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLogReaderFollowsTheLog: records are read from a position, across
// segments, as they are appended; End and Find land where they say; a
// torn tail at the end of a closed segment is skipped, said so.
func TestLogReaderFollowsTheLog(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st, err := Open(ctx, dir, Options{SegmentBytes: 2048})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := st.LogReader()
	defer r.Close()
	if got, err := r.Read(LogPosition{}, 10); err != nil || len(got) != 0 {
		t.Fatalf("empty log: %v %v", got, err)
	}
	appendN := func(n int) {
		for range n {
			if err := st.Append(ctx, Record{Time: time.Now(), Kind: "test", Principal: "p", Operation: "op_with_a_long_name_to_fill_segments"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendN(40)
	var pos LogPosition
	var seqs []uint64
	v := NewChainVerifier()
	for {
		batch, err := r.Read(pos, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) == 0 {
			break
		}
		for _, e := range batch {
			seqs = append(seqs, e.Record.Seq)
			if _, err := v.Next(e.Raw); err != nil {
				t.Fatalf("seq %d does not verify as read: %v", e.Record.Seq, err)
			}
		}
		pos = batch[len(batch)-1].Next
	}
	if len(seqs) != 40 || seqs[0] != 1 || seqs[39] != 40 {
		t.Fatalf("read %v", seqs)
	}
	if pos.Segment < 2 {
		t.Fatalf("the test meant to cross segments: %+v", pos)
	}
	appendN(3) // appended after the reader reached the end
	batch, err := r.Read(pos, 10)
	if err != nil || len(batch) != 3 || batch[0].Record.Seq != 41 {
		t.Fatalf("new records: %d %v", len(batch), err)
	}
	end, last, err := r.End()
	if err != nil || last == nil || last.Seq != 43 || end != batch[2].Next {
		t.Fatalf("End: %+v %+v %v (want %+v)", end, last, err, batch[2].Next)
	}
	at, err := r.Find(20)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := r.Read(at, 1); len(b) != 1 || b[0].Record.Seq != 20 {
		t.Fatalf("Find(20) lands on %+v", b)
	}

	// A torn tail in a closed segment: skipped, said so.
	first := filepath.Join(dir, AuditDir, segmentName(1))
	f, err := os.OpenFile(first, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":99,"ti`)
	f.Close()
	r2 := NewLogReader(dir)
	defer r2.Close()
	all, err := r2.Read(LogPosition{}, 100)
	if !errors.Is(err, ErrTornSkipped) || len(all) != 43 {
		t.Fatalf("torn tail: %d records, %v", len(all), err)
	}
}

// TestForwardCursors: saved atomically, loaded as saved, leased by one.
func TestForwardCursors(t *testing.T) {
	ctx := context.Background()
	c := ForwardCursors{Dir: t.TempDir()}
	if _, ok, err := c.Load(ctx, "audit-0011"); ok || err != nil {
		t.Fatalf("no cursor yet: %v %v", ok, err)
	}
	want := ForwardCursor{Seq: 7, Hash: "ab", Position: LogPosition{Segment: 2, Offset: 99}, Destination: "x"}
	if err := c.Save(ctx, "audit-0011", want); err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.Load(ctx, "audit-0011")
	if !ok || err != nil || got.Seq != 7 || got.Position != want.Position {
		t.Fatalf("loaded %+v %v %v", got, ok, err)
	}
	if fi, err := os.Stat(filepath.Join(c.Dir, "forward", "audit-0011.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cursor file: %v %v", fi.Mode(), err)
	}
	if err := c.Save(ctx, "../escape", want); err == nil {
		t.Fatal("a cursor name with a path in it was accepted")
	}
	release, err := c.Lease(ctx, "audit-0011")
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := c.Lease(short, "audit-0011"); err == nil {
		t.Fatal("two leases at once")
	}
	release()
	if r2, err := c.Lease(ctx, "audit-0011"); err != nil {
		t.Fatal(err)
	} else {
		r2()
	}
}
