package forward

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aqlguard/aqlguard/store"
)

// RepairHint is the command that repairs a cursor that does not match
// the log.
const RepairHint = "aqlguard audit forward reset --to start|end|SEQ"

// CursorError says a destination's cursor does not match the log: it
// does not read (truncated, damaged), it is past the log's end, or it
// names a record the log holds with another hash (a cursor of another
// log). Nothing is forwarded to the destination until it is repaired
// (RepairHint): guessing where to go on would either send the log again
// or skip records, and say neither.
type CursorError struct {
	Destination string
	// Where is the cursor: its file, or its row.
	Where string
	// Problem says what is wrong.
	Problem string
}

func (e *CursorError) Error() string {
	return fmt.Sprintf("the forwarding cursor for %s (%s) %s: nothing is forwarded there until it is repaired: %s",
		e.Destination, e.Where, e.Problem, RepairHint)
}

// CheckCursor loads destination's cursor and checks it against the log:
// ok is false when there is none yet (a new destination); a cursor
// that does not match the log is a *CursorError.
func CheckCursor(ctx context.Context, lg Log, cursors Cursors, destination string) (cur store.ForwardCursor, ok bool, err error) {
	name := CursorName(destination)
	bad := func(problem string) error {
		return &CursorError{Destination: destination, Where: cursors.Where(name), Problem: problem}
	}
	cur, ok, err = cursors.Load(ctx, name)
	if err != nil {
		var damaged *store.CursorDamagedError
		if errors.As(err, &damaged) {
			return cur, false, bad("does not read (truncated or damaged: " + damaged.Err.Error() + ")")
		}
		return cur, false, err
	}
	if !ok || cur.Seq == 0 {
		return cur, ok, nil
	}
	_, last, err := lg.End()
	if err != nil {
		return cur, ok, err
	}
	if last == nil || cur.Seq > last.Seq {
		end := uint64(0)
		if last != nil {
			end = last.Seq
		}
		return cur, ok, bad(fmt.Sprintf("is past the end of the audit log: it says record %d was delivered, the log ends at record %d", cur.Seq, end))
	}
	pos, err := lg.Find(cur.Seq)
	if err != nil {
		// Not in the log (a gap a state reset accepted): the next record
		// is found by its number (start).
		return cur, ok, nil
	}
	got, err := lg.Read(pos, 1)
	if err != nil && !errors.Is(err, store.ErrTornSkipped) {
		return cur, ok, err
	}
	if len(got) == 1 && got[0].Record.Seq == cur.Seq && got[0].Record.Hash != cur.Hash {
		return cur, ok, bad(fmt.Sprintf("is from another audit log: it says record %d with hash %s was delivered, this log's record %d has hash %s",
			cur.Seq, short(cur.Hash), cur.Seq, short(got[0].Record.Hash)))
	}
	return cur, ok, nil
}

func short(hash string) string {
	if len(hash) > 16 {
		return hash[:16] + "…"
	}
	return hash
}

// ResetTo is where `audit forward reset --to` puts a cursor: the log's
// start ("start"), its end ("end"), or after record SEQ.
func ResetTo(ctx context.Context, lg Log, destination, to string) (cur store.ForwardCursor, sends string, err error) {
	_, last, err := lg.End()
	if err != nil {
		return cur, "", err
	}
	end := uint64(0)
	if last != nil {
		end = last.Seq
	}
	cur = store.ForwardCursor{Destination: destination}
	var after uint64
	switch strings.ToLower(to) {
	case "start":
	case "end":
		if cur.Position, _, err = lg.End(); err != nil {
			return cur, "", err
		}
		if last != nil {
			cur.Seq, cur.Hash = last.Seq, last.Hash
		}
		after = end
	default:
		n, perr := strconv.ParseUint(to, 10, 64)
		if perr != nil {
			return cur, "", fmt.Errorf("--to %q: use start, end or a record's number", to)
		}
		if n > end {
			return cur, "", fmt.Errorf("--to %d: the audit log ends at record %d", n, end)
		}
		if n > 0 {
			pos, err := lg.Find(n)
			if err != nil {
				return cur, "", fmt.Errorf("--to %d: %w", n, err)
			}
			got, err := lg.Read(pos, 1)
			if err != nil && !errors.Is(err, store.ErrTornSkipped) {
				return cur, "", err
			}
			if len(got) != 1 || got[0].Record.Seq != n {
				return cur, "", fmt.Errorf("--to %d: the audit log has no record %d", n, n)
			}
			cur.Seq, cur.Hash, cur.Position = n, got[0].Record.Hash, got[0].Next
		}
		after = n
	}
	switch {
	case after >= end:
		sends = fmt.Sprintf("nothing of the log's %d records is sent; records written from now on are", end)
	default:
		sends = fmt.Sprintf("records %d to %d (%d records) are sent, then every record written from now on", after+1, end, end-after)
	}
	return cur, sends, nil
}
