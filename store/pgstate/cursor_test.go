package pgstate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/audit/forward"
	"github.com/aqlguard/aqlguard/internal/fixture/pgtest"
	"github.com/aqlguard/aqlguard/store"
)

// TestForwardCursorMismatch (issue 32, item 3) on PostgreSQL: a cursor
// row past the end of the chain, or from another state's chain, is a
// *forward.CursorError naming its row; a reset repairs it. (A truncated
// cursor cannot be stored: the column is json.)
func TestForwardCursorMismatch(t *testing.T) {
	ctx := context.Background()
	cluster := pgtest.Shared(t)
	st, other := openIn(t, cluster.Database(t)), openIn(t, cluster.Database(t))
	defer st.Close()
	defer other.Close()
	for i, s := range []store.State{st, other} {
		var recs []store.Record
		for range 10 {
			recs = append(recs, store.Record{Time: t0, Kind: "decision", Principal: []string{"claude", "other"}[i]})
		}
		if err := store.AppendRecords(ctx, s, recs...); err != nil {
			t.Fatal(err)
		}
	}
	const dest = "syslog tcp://collector:6514"
	name := forward.CursorName(dest)
	lg := st.AuditReader()
	defer lg.Close()
	theirs, _, err := forward.ResetTo(ctx, other.AuditReader(), dest, "6")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		cur     store.ForwardCursor
		problem string
	}{
		{"past the end", store.ForwardCursor{Seq: 50, Hash: "x", Destination: dest}, "is past the end of the audit log: it says record 50 was delivered, the log ends at record 10"},
		{"from another log", theirs, "is from another audit log: it says record 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := st.Cursors().Save(ctx, name, tc.cur); err != nil {
				t.Fatal(err)
			}
			var bad *forward.CursorError
			if _, _, err := forward.CheckCursor(ctx, lg, st.Cursors(), dest); !errors.As(err, &bad) ||
				!strings.Contains(bad.Problem, tc.problem) || !strings.Contains(bad.Where, name) || !strings.Contains(bad.Where, "forward_cursors") {
				t.Fatalf("CheckCursor: %v", err)
			}
			cur, sends, err := forward.ResetTo(ctx, lg, dest, "4")
			if err != nil || !strings.HasPrefix(sends, "records 5 to 10 (6 records) are sent") {
				t.Fatalf("ResetTo: %q, %v", sends, err)
			}
			if err := st.Cursors().Save(ctx, name, cur); err != nil {
				t.Fatal(err)
			}
			if got, ok, err := forward.CheckCursor(ctx, lg, st.Cursors(), dest); err != nil || !ok || got.Seq != 4 {
				t.Fatalf("after the reset: %+v %v %v", got, ok, err)
			}
		})
	}
}
