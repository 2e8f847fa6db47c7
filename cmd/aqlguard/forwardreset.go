package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aqlguard/aqlguard/app"
	"github.com/aqlguard/aqlguard/audit/forward"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/store"
)

const auditForwardUsage = `usage: aqlguard audit forward reset --to start|end|SEQ [--state-dir DIR]

Moves the cursor of the [audit.forward] destination: how far the audit
log was delivered there. aqlguard refuses to forward from a cursor that
does not match the log (it does not read, it is past the log's end, or it
is another log's), says so at start and in doctor, and goes on once it
is repaired here:

  --to start   send the whole log again (a collector that keeps seq and
               hash drops what it has)
  --to end     send nothing of what the log holds now, only what comes
  --to SEQ     send the records after record SEQ

It says which records will be sent. A running aqlguard picks the new
cursor up within its retry interval (30 s); the change is audited. It
waits a few seconds for the destination's lease: while another aqlguard
forwards there from a cursor that matches, it refuses.
`

// cmdAuditForward is `aqlguard audit forward reset --to START|END|SEQ`.
func cmdAuditForward(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "reset" {
		fmt.Fprint(stderr, auditForwardUsage)
		return 2
	}
	fs, g := newFlags("audit forward reset", stderr)
	to := fs.String("to", "", "start, end, or the number of the last record the destination has")
	rest, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return 2
	}
	if len(rest) > 0 || *to == "" {
		fmt.Fprint(stderr, auditForwardUsage)
		return 2
	}
	cfg, err := loadConfig(g)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	if cfg.Audit.Forward == nil {
		fmt.Fprintln(stderr, "aqlguard audit forward reset: the config has no [audit.forward]: nothing is forwarded, so there is no cursor to move")
		return 1
	}
	st, code := storeFor(g, writeState, stderr)
	if st == nil {
		return code
	}
	defer st.Close()
	msg, err := resetForwardCursor(context.Background(), st, cfg.Audit.Forward, *to)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard audit forward reset: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, msg)
	return 0
}

// forwardLeaseWait is how long the reset waits for the destination's
// lease before it says another process holds it.
const forwardLeaseWait = 3 * time.Second

// resetForwardCursor moves the configured destination's cursor to to,
// records it, and says what was wrong and what will be sent.
func resetForwardCursor(ctx context.Context, st store.State, fc *config.Forward, to string) (string, error) {
	fw, err := forward.New(fc, st, version(), nil)
	if err != nil {
		return "", err
	}
	defer fw.Log.Close()
	defer fw.Sink.Close()
	dest := fw.Sink.Destination()
	name := forward.CursorName(dest)
	lctx, cancel := context.WithTimeout(ctx, forwardLeaseWait)
	release, err := fw.Cursors.Lease(lctx, name)
	cancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return "", fmt.Errorf("another aqlguard process is forwarding to %s now, from a cursor that matches the log: "+
				"stop it first if the cursor must move", dest)
		}
		return "", err
	}
	defer release()
	was := "none (a new destination)"
	old, ok, cerr := forward.CheckCursor(ctx, fw.Log, fw.Cursors, dest)
	var bad *forward.CursorError
	switch {
	case errors.As(cerr, &bad):
		was = bad.Problem
	case cerr != nil:
		return "", cerr
	case ok:
		was = fmt.Sprintf("after record %d", old.Seq)
	}
	cur, sends, err := forward.ResetTo(ctx, fw.Log, dest, to)
	if err != nil {
		return "", err
	}
	cur.At = time.Now().UTC()
	rec := store.NewRecord(time.Now(), store.KindAdmin, osUser(), app.ProcessName(), "")
	rec.Operation, rec.Decision, rec.Result = "audit forward reset", "forward_reset", sends
	rec.Factors = []string{"destination: " + dest, "cursor was: " + was, fmt.Sprintf("cursor now: after record %d", cur.Seq)}
	if err := store.AppendRecords(ctx, st, rec); err != nil {
		return "", fmt.Errorf("recording the reset (the cursor is unchanged): %w", err)
	}
	if err := fw.Cursors.Save(ctx, name, cur); err != nil {
		return "", err
	}
	return fmt.Sprintf("the forwarding cursor for %s (%s) was: %s; now: after record %d. To %s: %s (from the next start of aqlguard, "+
		"or within 30 s by a running one).", dest, fw.Cursors.Where(name), was, cur.Seq, dest, sends), nil
}
