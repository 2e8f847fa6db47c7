// Package forward ships the audit log to a collector as it is written:
// syslog (RFC 5424 over RELP, TCP or TLS), OTLP/HTTP logs, Splunk's HTTP Event
// Collector, or a file of OCSF events. Delivery is at least once and in
// order: the forwarder reads the log behind the calls (store.LogReader:
// no lock, no database, so a call never waits for it), sends batches,
// and moves its durable cursor (Cursors) only past what the collector
// has confirmed (Sink.Send says how far: at once for a collector that
// answers, later for plain syslog, which cannot tell). After a crash, a
// kill -9, a lost connection or a collector's outage it sends again
// everything after the cursor; every record carries its sequence number, its
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

	"github.com/aqlguard/aqlguard/config"
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

// Sink delivers batches to one collector, in order, each after the
// ones before it.
type Sink interface {
	// Send puts batch on its way to the collector and returns the
	// sequence number of the last record the collector is now known to
	// have (0: none known yet); the cursor moves up to it. A collector
	// that confirms what it got (an HTTP answer, RELP's, a file's
	// fsync) confirms the whole batch; a transport that cannot tell
	// (plain syslog over TCP or TLS) confirms it later, the last record
	// of an earlier batch, and Send with no batch asks only that. An
	// error means nothing after the last record confirmed is known
	// delivered: the forwarder sends all of it again. Send never
	// confirms a record in the middle of a batch.
	Send(ctx context.Context, batch []store.LogEntry) (delivered uint64, err error)
	// Destination names the collector for logs and the cursor (never a
	// secret: no header, no credential).
	Destination() string
	Close() error
}

// maxUnconfirmed bounds the records sent and not yet confirmed: beyond
// it the forwarder waits for confirmations before it sends more, so
// that what is sent again after a lost connection stays bounded.
const maxUnconfirmed = 100_000

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
	p := &progress{cur: cur, head: cur.Position, last: cur.Hash}
	for {
		err := f.deliver(ctx, name, p)
		if ctx.Err() != nil {
			flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushWithin)
			_ = f.deliver(flush, name, p)
			cancel()
			return nil
		}
		wait := f.poll()
		if err != nil {
			// The log could not be read (a record that does not decode,
			// an I/O error): said, and tried again, never skipped.
			f.log().Error("the audit log could not be read for forwarding; trying again", "to", f.Sink.Destination(),
				"after_seq", p.cur.Seq, "err", err)
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

// progress is how far delivery is: the cursor (the last record known
// delivered), the position of the next record to send, and the batches
// sent since the cursor that the collector has not confirmed yet.
type progress struct {
	cur     store.ForwardCursor
	head    store.LogPosition
	last    string // the hash of the last record sent
	pending []sentBatch
	wait    time.Duration // before the next try after a failure
}

// sentBatch is a batch sent and not yet confirmed: where the cursor goes
// once it is, and when its first record was written (the lag).
type sentBatch struct {
	seq     uint64
	hash    string
	next    store.LogPosition
	records int
	oldest  time.Time
}

func (p *progress) unconfirmed() int {
	n := 0
	for _, b := range p.pending {
		n += b.records
	}
	return n
}

// deliver sends everything the log has after what was sent, batch by
// batch, and moves the cursor as the collector confirms. A failed send
// goes back to the cursor and sends everything after it again (at
// least once: the collector may get some records twice), after a
// growing pause, until the collector confirms or ctx ends.
func (f *Forwarder) deliver(ctx context.Context, name string, p *progress) error {
	batchSize := f.Batch
	if batchSize <= 0 {
		batchSize = config.DefaultForwardBatch
	}
	for {
		var batch []store.LogEntry
		if p.unconfirmed() < maxUnconfirmed {
			var err error
			batch, err = f.Log.Read(p.head, batchSize)
			if errors.Is(err, store.ErrTornSkipped) {
				f.log().Warn("the audit log has a torn record (a write cut short by a crash); forwarding goes on after it")
			} else if err != nil {
				f.fail(err)
				return err
			}
		}
		if len(batch) == 0 && len(p.pending) == 0 {
			return nil
		}
		if len(batch) > 0 {
			if p.last != "" && batch[0].Record.Prev != p.last {
				f.log().Error("the audit log's chain breaks here; forwarding it as it is", "after_seq", batch[0].Record.Seq-1,
					"seq", batch[0].Record.Seq)
			}
			if len(p.pending) == 0 {
				f.mu.Lock()
				f.status.Oldest = batch[0].Record.Time
				f.mu.Unlock()
			}
		}
		delivered, err := f.Sink.Send(ctx, batch)
		if len(batch) > 0 && err == nil {
			last := batch[len(batch)-1]
			p.pending = append(p.pending, sentBatch{seq: last.Record.Seq, hash: last.Record.Hash, next: last.Next,
				records: len(batch), oldest: batch[0].Record.Time})
			p.head, p.last = last.Next, last.Record.Hash
		}
		f.confirmed(ctx, name, p, delivered)
		if err != nil && ctx.Err() != nil {
			return nil // stopping: Run's flush tries once more
		}
		if err != nil {
			// Nothing after the cursor is known delivered: all of it again.
			f.fail(err)
			p.head, p.last, p.pending = p.cur.Position, p.cur.Hash, nil
			if p.wait == 0 {
				p.wait = 500 * time.Millisecond
			}
			f.log().Warn("audit forwarding failed; sending again everything after the last record the collector confirmed",
				"to", f.Sink.Destination(), "from_seq", p.cur.Seq+1, "retry_in", p.wait, "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(p.wait + rand.N(p.wait/4+1)):
			}
			p.wait = min(2*p.wait, f.retry())
			continue
		}
		p.wait = 0
		f.mu.Lock()
		f.status.Failing = ""
		f.mu.Unlock()
		if len(batch) == 0 {
			// Nothing new to send: what was sent is confirmed later.
			return nil
		}
	}
}

// confirmed moves the cursor past the batches up to delivered and saves
// it.
func (f *Forwarder) confirmed(ctx context.Context, name string, p *progress, delivered uint64) {
	n := 0
	for n < len(p.pending) && p.pending[n].seq <= delivered {
		n++
	}
	if n == 0 {
		return
	}
	b := p.pending[n-1]
	p.pending = p.pending[n:]
	p.cur = store.ForwardCursor{Seq: b.seq, Hash: b.hash, Position: b.next, Destination: f.Sink.Destination(), At: time.Now().UTC()}
	if err := f.Cursors.Save(context.WithoutCancel(ctx), name, p.cur); err != nil {
		// Delivered, not remembered: sent again after a restart.
		f.log().Error("the forwarding cursor could not be saved", "err", err)
	}
	st := Status{Delivered: p.cur.Seq, At: p.cur.At}
	if len(p.pending) > 0 {
		st.Oldest = p.pending[0].oldest
	}
	f.mu.Lock()
	f.status = st
	f.mu.Unlock()
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
