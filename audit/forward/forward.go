// Package forward ships the audit log to a collector as it is written:
// syslog (RFC 5424 over TCP or TLS), OTLP/HTTP logs, Splunk's HTTP Event
// Collector, or a file of OCSF events. Delivery is at least once and in
// order: the forwarder reads the log behind the calls (store.LogReader:
// no lock, no database, so a call never waits for it), sends a batch,
// and only when the collector has confirmed it moves its durable cursor
// (Cursors). After a crash, a kill -9 or a collector's outage it sends
// again from the cursor; every record carries its sequence number, its
// hash and its predecessor's hash, so the receiver drops what it already
// has and verifies the chain.
package forward

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/store"
)

// Log is the audit log, read from a position (store.LogReader).
type Log interface {
	Read(pos store.LogPosition, max int) ([]store.LogEntry, error)
	End() (store.LogPosition, *store.Record, error)
	Find(seq uint64) (store.LogPosition, error)
	Close() error
}

// Cursors keep how far each destination was delivered, durably, and
// make one process of those sharing a state the forwarder of a
// destination (store.ForwardCursors; a shared database keeps them in a
// table and leases with an advisory lock).
type Cursors interface {
	Load(ctx context.Context, name string) (store.ForwardCursor, bool, error)
	Save(ctx context.Context, name string, c store.ForwardCursor) error
	Lease(ctx context.Context, name string) (release func(), err error)
	// Where names where a cursor is kept (a file, a row), for people.
	Where(name string) string
}

// Sink delivers batches to one collector. Send returns nil only when the
// collector has the records: then the cursor moves past them.
type Sink interface {
	Send(ctx context.Context, batch []store.LogEntry) error
	// Destination names the collector for logs and the cursor (never a
	// secret: no header, no credential).
	Destination() string
	Close() error
}

// Forwarder ships one state's audit log to one sink.
type Forwarder struct {
	Log     Log
	Cursors Cursors
	Sink    Sink
	// Batch bounds the records of one delivery (default 500).
	Batch int
	// Newest starts a destination that has no cursor at the end of the
	// log instead of its start.
	Newest bool
	// Poll is how often the log is looked at for new records (default
	// 1 s: a collector a second behind, and a process that wakes for it
	// once a second); Retry bounds the wait between failed deliveries (default
	// 30 s, from 500 ms doubling).
	Poll, Retry time.Duration
	Logger      *slog.Logger

	mu     sync.Mutex
	status Status
}

// Status is how far delivery is.
type Status struct {
	Delivered uint64    // the last record the collector confirmed
	At        time.Time // when
	Failing   string    // the last delivery's error, "" when it went through
	// Oldest is when the oldest record not yet confirmed was written
	// (zero when the collector has everything read so far): how far
	// the collector is behind, in time.
	Oldest time.Time
}

// Status is how far delivery is now.
func (f *Forwarder) Status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

// CursorName is the cursor's name for a destination: the destination
// changed is a new cursor, starting as Start says.
func CursorName(destination string) string {
	sum := sha256.Sum256([]byte(destination))
	return "audit-" + hex.EncodeToString(sum[:8])
}

func (f *Forwarder) log() *slog.Logger {
	if f.Logger != nil {
		return f.Logger
	}
	return slog.Default()
}

// Run delivers until ctx ends, then tries once more, for at most
// flushWithin, to deliver what is left. A cursor that does not match the
// log (CheckCursor) is logged as an error naming it and what is wrong,
// and nothing is sent; Run looks at it again every Retry, without the
// lease (so that `audit forward reset` can take it), and forwards once
// it has been repaired.
func (f *Forwarder) Run(ctx context.Context) error {
	defer f.Log.Close()
	defer f.Sink.Close()
	name := CursorName(f.Sink.Destination())
	var cur store.ForwardCursor
	var release func()
	for said := ""; ; {
		var err error
		release, err = f.Cursors.Lease(ctx, name)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("forwarding the audit log to %s: %w", f.Sink.Destination(), err)
		}
		cur, err = f.start(ctx, name)
		var bad *CursorError
		if !errors.As(err, &bad) {
			if err != nil {
				release()
				return err
			}
			if said != "" {
				f.log().Info("the forwarding cursor was repaired", "to", f.Sink.Destination(), "cursor", f.Cursors.Where(name))
			}
			break
		}
		release()
		f.fail(err)
		if bad.Problem != said {
			f.log().Error("the forwarding cursor does not match the audit log; nothing is forwarded to this destination until it is repaired",
				"to", f.Sink.Destination(), "cursor", bad.Where, "problem", bad.Problem, "repair", RepairHint)
			said = bad.Problem
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(f.retry()):
		}
	}
	defer release()
	f.log().Info("forwarding the audit log", "to", f.Sink.Destination(), "from_seq", cur.Seq+1)
	for {
		var err error
		cur, err = f.deliver(ctx, name, cur)
		if ctx.Err() != nil {
			flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushWithin)
			_, _ = f.deliver(flush, name, cur)
			cancel()
			return nil
		}
		wait := f.poll()
		if err != nil {
			// The log could not be read (a record that does not decode,
			// an I/O error): said, and tried again, never skipped.
			f.log().Error("the audit log could not be read for forwarding; trying again", "to", f.Sink.Destination(),
				"after_seq", cur.Seq, "err", err)
			wait = f.retry()
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

const flushWithin = 3 * time.Second

func (f *Forwarder) poll() time.Duration {
	if f.Poll > 0 {
		return f.Poll
	}
	return time.Second
}

// start loads the cursor, or makes one as Newest says, and checks that
// the log still continues it where it says.
func (f *Forwarder) start(ctx context.Context, name string) (store.ForwardCursor, error) {
	cur, ok, err := CheckCursor(ctx, f.Log, f.Cursors, f.Sink.Destination())
	if err != nil {
		return cur, err
	}
	if !ok {
		cur = store.ForwardCursor{Destination: f.Sink.Destination()}
		if f.Newest {
			pos, last, err := f.Log.End()
			if err != nil {
				return cur, err
			}
			cur.Position = pos
			if last != nil {
				cur.Seq, cur.Hash = last.Seq, last.Hash
			}
		}
		return cur, nil
	}
	next, err := f.Log.Read(cur.Position, 1)
	if err != nil && !errors.Is(err, store.ErrTornSkipped) {
		return cur, err
	}
	if len(next) == 0 || next[0].Record.Seq == cur.Seq+1 {
		return cur, nil
	}
	// The position no longer holds the next record (the log was reset):
	// find it by its number. A record that does not link to the last one
	// delivered is sent all the same; the receiver's chain check shows
	// the break.
	pos, err := f.Log.Find(cur.Seq + 1)
	if err != nil {
		return cur, err
	}
	f.log().Error("the audit log does not continue where forwarding stopped; going on from the next record by its number",
		"to", f.Sink.Destination(), "delivered_seq", cur.Seq)
	cur.Position = pos
	return cur, nil
}

// deliver sends everything the log has after cur, batch by batch,
// retrying each until the collector confirms it or ctx ends.
func (f *Forwarder) deliver(ctx context.Context, name string, cur store.ForwardCursor) (store.ForwardCursor, error) {
	batchSize := f.Batch
	if batchSize <= 0 {
		batchSize = policy.DefaultForwardBatch
	}
	for {
		batch, err := f.Log.Read(cur.Position, batchSize)
		if errors.Is(err, store.ErrTornSkipped) {
			f.log().Warn("the audit log has a torn record (a write cut short by a crash); forwarding goes on after it")
		} else if err != nil {
			f.fail(err)
			return cur, err
		}
		if len(batch) == 0 {
			return cur, nil
		}
		if cur.Seq > 0 && batch[0].Record.Prev != cur.Hash {
			f.log().Error("the audit log's chain breaks here; forwarding it as it is", "after_seq", cur.Seq,
				"seq", batch[0].Record.Seq)
		}
		f.mu.Lock()
		f.status.Oldest = batch[0].Record.Time
		f.mu.Unlock()
		wait := 500 * time.Millisecond
		for {
			err := f.Sink.Send(ctx, batch)
			if err == nil {
				break
			}
			f.fail(err)
			f.log().Warn("audit forwarding failed; sending again", "to", f.Sink.Destination(), "seq", batch[0].Record.Seq,
				"records", len(batch), "retry_in", wait, "err", err)
			select {
			case <-ctx.Done():
				return cur, nil
			case <-time.After(wait + rand.N(wait/4+1)):
			}
			wait = min(2*wait, f.retry())
		}
		last := batch[len(batch)-1]
		cur = store.ForwardCursor{Seq: last.Record.Seq, Hash: last.Record.Hash, Position: last.Next,
			Destination: f.Sink.Destination(), At: time.Now().UTC()}
		if err := f.Cursors.Save(context.WithoutCancel(ctx), name, cur); err != nil {
			// Delivered, not remembered: sent again after a restart.
			f.log().Error("the forwarding cursor could not be saved", "err", err)
		}
		f.mu.Lock()
		f.status = Status{Delivered: cur.Seq, At: cur.At}
		f.mu.Unlock()
	}
}

func (f *Forwarder) retry() time.Duration {
	if f.Retry > 0 {
		return f.Retry
	}
	return 30 * time.Second
}

func (f *Forwarder) fail(err error) {
	f.mu.Lock()
	f.status.Failing = err.Error()
	f.mu.Unlock()
}
