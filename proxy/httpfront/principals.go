package httpfront

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/proxy/parking"
	"github.com/aqlguard/aqlguard/proxy/relay"
)

// Tenant is what the sessions of one principal share on serve: its guard
// and the relay configuration built on it.
type Tenant interface {
	// Relay is the relay configuration of the principal's sessions.
	Relay() *relay.Config
	// Drop writes what must outlive the tenant to the state and ends it.
	// An error (parking.ErrBusy: it holds what cannot be written yet; or the
	// state unreachable) leaves it as it was, in use.
	Drop(ctx context.Context) error
}

// Principals keeps one Tenant per principal while it is in use, and
// drops one once nothing has held it for Idle: a gateway behind an
// identity provider holds what its active principals need, not what
// every principal it ever saw left behind.
//
// A tenant is held by every session of its principal (Hold, from a
// session's initialize to its end; a 2026-07-28 client's shared session
// and each of its POSTs alike), so a tenant with a session open or a
// call in flight is never dropped; Drop itself refuses while the guard
// holds what cannot be written (a question on the human's screen, a
// verify pause in force). A principal that comes back while its tenant
// is being dropped waits for the drop to end, then gets the tenant kept
// (the drop failed) or a new one made after it (which takes over what
// the drop wrote): never two tenants of one principal at once.
//
// Idle tenants are also kept to MaxIdle: past it the longest idle are
// dropped at once, however recently they were used (a drop loosens
// nothing; it costs the principal's next session one read), so that
// principals arriving faster than Idle lets them go cannot pile up.
type Principals[T Tenant] struct {
	// Make builds the principal's tenant, taking over what a dropped one
	// wrote to the state; an error refuses the session.
	Make func(ctx context.Context, principal string) (T, error)
	// Idle is how long a tenant nobody holds is kept (default
	// DefaultPrincipalIdle).
	Idle time.Duration
	// MaxIdle bounds the tenants nobody holds (default DefaultMaxIdle).
	MaxIdle int
	// Log receives a line per tenant made and dropped; nil discards.
	Log *slog.Logger
	// now defaults to time.Now (tests set it).
	now func() time.Time

	mu   sync.Mutex
	held map[string]*tenant[T]
	// kick asks Run to reap now: MaxIdle was passed.
	kick chan struct{}
}

// DefaultPrincipalIdle is how long serve keeps an idle principal's guard
// by default ([serve] principal_idle_timeout).
const DefaultPrincipalIdle = 10 * time.Minute

// DefaultMaxIdle is how many idle principals' guards serve keeps at most
// (about 0.4 MiB each).
const DefaultMaxIdle = 64

// tenant is one principal's entry.
type tenant[T Tenant] struct {
	t     T
	ready chan struct{} // closed once made (err says whether)
	err   error
	refs  int       // holders now
	since time.Time // when refs last fell to 0
	// dropping is closed when a drop in progress ends; nil when none is.
	dropping chan struct{}
}

func (p *Principals[T]) idle() time.Duration {
	if p.Idle > 0 {
		return p.Idle
	}
	return DefaultPrincipalIdle
}

func (p *Principals[T]) maxIdle() int {
	if p.MaxIdle > 0 {
		return p.MaxIdle
	}
	return DefaultMaxIdle
}

// idleCount counts the tenants nobody holds; p.mu is held.
func (p *Principals[T]) idleCount() int {
	n := 0
	for _, h := range p.held {
		if h.refs == 0 {
			n++
		}
	}
	return n
}

func (p *Principals[T]) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

func (p *Principals[T]) log() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Hold returns the principal's relay configuration, making its tenant
// if it has none, and holds the tenant until release is called (once;
// later calls do nothing).
func (p *Principals[T]) Hold(ctx context.Context, principal string) (rc *relay.Config, release func(), err error) {
	for {
		p.mu.Lock()
		if p.held == nil {
			p.held = map[string]*tenant[T]{}
		}
		h := p.held[principal]
		if h == nil {
			h = &tenant[T]{ready: make(chan struct{}), refs: 1}
			p.held[principal] = h
			p.mu.Unlock()
			return p.make(ctx, principal, h)
		}
		if wait := h.dropping; wait != nil {
			p.mu.Unlock()
			select {
			case <-wait:
				continue // kept, or gone: look again
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		h.refs++
		p.mu.Unlock()
		release = p.releaser(principal, h)
		select {
		case <-h.ready:
		case <-ctx.Done():
			release()
			return nil, nil, ctx.Err()
		}
		if h.err != nil {
			release()
			return nil, nil, h.err
		}
		return h.t.Relay(), release, nil
	}
}

// make builds h, held once by its maker.
func (p *Principals[T]) make(ctx context.Context, principal string, h *tenant[T]) (*relay.Config, func(), error) {
	t, err := p.Make(ctx, principal)
	p.mu.Lock()
	h.t, h.err = t, err
	if err != nil && p.held[principal] == h {
		delete(p.held, principal) // the next session tries again
	}
	n := len(p.held)
	p.mu.Unlock()
	close(h.ready)
	if err != nil {
		return nil, nil, err
	}
	p.log().Debug("a principal's guard was made", "principal", principal, "guards", n)
	return t.Relay(), p.releaser(principal, h), nil
}

// releaser is the release of one hold of h.
func (p *Principals[T]) releaser(principal string, h *tenant[T]) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if h.refs--; h.refs == 0 {
				h.since = p.clock()
				if p.held[principal] == h && p.idleCount() > p.maxIdle() {
					select {
					case p.kicker() <- struct{}{}:
					default: // a reap is asked for already
					}
				}
			}
		})
	}
}

// kicker is the channel that asks Run to reap; p.mu is held.
func (p *Principals[T]) kicker() chan struct{} {
	if p.kick == nil {
		p.kick = make(chan struct{}, 1)
	}
	return p.kick
}

// Len is how many principals have a tenant now (being made or dropped
// included).
func (p *Principals[T]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}

// Each calls fn with every tenant made (a reload, the metrics), outside
// the lock.
func (p *Principals[T]) Each(fn func(principal string, t T)) {
	type one struct {
		name string
		t    T
	}
	var all []one
	p.mu.Lock()
	for name, h := range p.held {
		select {
		case <-h.ready:
			if h.err == nil {
				all = append(all, one{name, h.t})
			}
		default:
		}
	}
	p.mu.Unlock()
	for _, o := range all {
		fn(o.name, o.t)
	}
}

// Reap drops every tenant nobody has held for Idle, and the longest idle
// beyond MaxIdle, and returns how many it dropped. One whose Drop fails
// is kept, and tried again at the next Reap.
func (p *Principals[T]) Reap(ctx context.Context) int {
	idle := p.idle()
	type one struct {
		name string
		h    *tenant[T]
	}
	var idleOnes, recent []one
	now := p.clock()
	p.mu.Lock()
	for name, h := range p.held {
		select {
		case <-h.ready:
		default:
			continue // being made
		}
		if h.err != nil || h.refs > 0 || h.dropping != nil {
			continue
		}
		if now.Sub(h.since) >= idle {
			idleOnes = append(idleOnes, one{name, h})
		} else {
			recent = append(recent, one{name, h})
		}
	}
	if over := len(recent) - p.maxIdle(); over > 0 {
		slices.SortFunc(recent, func(a, b one) int { return a.h.since.Compare(b.h.since) })
		idleOnes = append(idleOnes, recent[:over]...)
	}
	for _, o := range idleOnes {
		o.h.dropping = make(chan struct{})
	}
	p.mu.Unlock()
	dropped := 0
	for _, o := range idleOnes {
		err := o.h.t.Drop(ctx)
		p.mu.Lock()
		if err == nil {
			delete(p.held, o.name)
			dropped++
		}
		close(o.h.dropping)
		o.h.dropping = nil
		n, idleFor := len(p.held), now.Sub(o.h.since).Round(time.Millisecond)
		p.mu.Unlock()
		switch {
		case err == nil:
			p.log().Info("an idle principal's guard was dropped", "principal", o.name, "idle_for", idleFor, "guards", n)
		case errors.Is(err, parking.ErrBusy), errors.Is(err, context.Canceled):
			p.log().Debug("an idle principal's guard is kept", "principal", o.name, "why", err)
		default:
			p.log().Warn("an idle principal's guard could not be dropped; it is kept, and dropped later", "principal", o.name, "err", err)
		}
	}
	return dropped
}

// Run reaps every quarter of Idle (at most every minute), and at once
// when MaxIdle is passed, until ctx ends.
func (p *Principals[T]) Run(ctx context.Context) {
	tick := time.NewTicker(max(min(p.idle()/4, time.Minute), 10*time.Millisecond))
	defer tick.Stop()
	p.mu.Lock()
	kick := p.kicker()
	p.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-kick:
		}
		p.Reap(ctx)
	}
}
