package guard

import (
	"context"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/store"
)

// A deny decided while the state cannot be written (the database down,
// the state directory read-only or busy) must not end as one refused
// call that the next call, once the state is back, walks past. The
// block, its challenge and the decision's record are kept in memory,
// the principal is refused as blocked by this process meanwhile, and
// they are written as soon as the state takes them: by the principal's
// next check, or by a retry that runs until then. Only once written is
// the code shown (a code is shown only with its challenge on disk).
// Memory is this process's: other processes on the state learn of the
// block when it is written, and a process that ends before that loses
// it (nothing else could have kept it).

// unwrittenBlock is a hard block decided but not written yet.
type unwrittenBlock struct {
	action  Action
	verdict Verdict
	block   store.Block
	show    *challengeCode
	record  store.Record
}

// Retry waits for an unwritten block.
const (
	unwrittenRetryMin = 100 * time.Millisecond
	unwrittenRetryMax = 5 * time.Second
)

// blockUnwritten is the verdict of a check whose commit failed with err,
// when its action is a deny: the block is kept in memory (see above) and
// the call refused as blocked. ok is false for any other action, which
// is refused as the state's failure says.
func (g *Guard) blockUnwritten(c *check, out round, err error) (v Verdict, ok bool) {
	a := c.a
	if out.block == nil {
		// The commit failed before its decision could be made (or
		// made it without a block): the evaluator alone says whether
		// this is a deny, on the memory every written commit left.
		g.mu.Lock()
		m := g.mem
		g.mu.Unlock()
		d := c.judge(stepFor(a, c.pol.Principal, m.steps+1, m.failurePause))
		if d.Decision != evaluator.Block {
			return Verdict{}, false
		}
		out.verdict, out.block, out.show = g.hardBlock(a, d)
		if out.block == nil {
			return Verdict{}, false // no challenge could be made: refused as the state's failure
		}
	}
	u := &unwrittenBlock{action: a, verdict: out.verdict, block: *out.block, show: out.show}
	g.mu.Lock()
	if g.unwritten != nil {
		u = g.unwritten // one block at a time: the first stands
		g.mu.Unlock()
		return g.heldVerdict(a, u, err), true
	}
	u.verdict.Directive.Factors = append(u.verdict.Directive.Factors,
		"fail closed: "+stateProblem(err)+"; the block holds in this process until it is written")
	u.record = g.decisionRecord(a, u.verdict, c.began)
	g.unwritten = u
	g.init()
	bg := g.bg
	g.running.Add(1)
	g.mu.Unlock()
	g.log().Error("principal hard-blocked, but the block could not be written; it holds in this process and is written as soon as the state can be",
		"principal", u.block.Principal, "reason", u.block.Reason, "verification", u.block.VerificationID, "err", err)
	go g.retryUnwritten(bg)
	return g.heldVerdict(a, u, err), true
}

// heldVerdict refuses a as blocked by an unwritten block.
func (g *Guard) heldVerdict(a Action, u *unwrittenBlock, err error) Verdict {
	b := u.block
	b.CodeNotShown = true // not yet: it is shown once written
	return g.blockedVerdict(a, &b, "hard block: set "+b.BlockedAt.Format(time.RFC3339)+
		", not written yet ("+stateProblem(err)+"); it holds in this process until it is written")
}

// holdUnwritten writes the unwritten block u before a check decides;
// while it cannot be, the check is refused as blocked (held is true).
func (g *Guard) holdUnwritten(ctx context.Context, a Action, u *unwrittenBlock) (v Verdict, held bool) {
	if err := g.writeUnwritten(ctx, u); err != nil {
		return g.heldVerdict(a, u, err), true
	}
	return Verdict{}, false // written: the check finds the block in the state
}

// writeUnwritten writes u (if no block is in the state already: then
// only its record), shows its code, and forgets it.
func (g *Guard) writeUnwritten(ctx context.Context, u *unwrittenBlock) error {
	var wrote, gone bool
	err := g.commit(ctx, func(v store.View, _ *memory) (store.Changes, error) {
		g.mu.Lock()
		gone = g.unwritten != u // written by a commit before this one
		g.mu.Unlock()
		if gone {
			return store.Changes{}, nil
		}
		cur, err := v.Block(u.block.Principal)
		if err != nil {
			return store.Changes{}, err
		}
		wrote = ruling.Unwritten(cur)
		c := store.Changes{Records: []store.Record{u.record}}
		if wrote {
			c.Blocks = []store.Block{u.block}
			if u.show != nil {
				c.Challenges = []store.Challenge{u.show.challenge}
			}
		}
		c.Then = func(uint64) {
			if g.unwritten == u {
				g.unwritten = nil
			}
			if wrote {
				g.observe(&u.block, u.block.Operation)
			} else {
				g.observe(cur, "")
			}
		}
		return c, nil
	})
	if err != nil || gone {
		return err
	}
	if !wrote || u.show == nil {
		g.log().Warn("a block decided while the state could not be written was recorded; another block was in force by then",
			"principal", u.block.Principal, "verification", u.block.VerificationID)
		return nil
	}
	g.log().Warn("principal hard-blocked: the block decided while the state could not be written is written now",
		"principal", u.block.Principal, "reason", u.block.Reason, "verification", u.block.VerificationID)
	g.shown(ctx, u.action, round{verdict: u.verdict, show: u.show, block: &u.block})
	return nil
}

// retryUnwritten writes the unwritten block once the state takes it, if
// no check did first, until the guard closes.
func (g *Guard) retryUnwritten(ctx context.Context) {
	defer g.running.Done()
	wait := unwrittenRetryMin
	for {
		select {
		case <-ctx.Done():
			g.mu.Lock()
			u := g.unwritten
			g.mu.Unlock()
			if u != nil {
				g.log().Error("aqlguard stopped before a block could be written: it is lost",
					"principal", u.block.Principal, "reason", u.block.Reason, "verification", u.block.VerificationID)
			}
			return
		case <-time.After(wait):
		}
		g.mu.Lock()
		u := g.unwritten
		g.mu.Unlock()
		if u == nil {
			return
		}
		wctx, cancel := context.WithTimeout(ctx, recordWithin)
		err := g.writeUnwritten(wctx, u)
		cancel()
		if err == nil {
			return
		}
		wait = min(2*wait, unwrittenRetryMax)
	}
}
