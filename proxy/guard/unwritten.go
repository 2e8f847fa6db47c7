package guard

import (
	"context"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/proxy/unwritten"
	"github.com/aqlguard/aqlguard/store"
)

// A deny decided while the state cannot be written is held in this
// process until it is (proxy/unwritten); meanwhile the principal is
// refused as blocked here.

// blockUnwritten is the verdict of a check whose commit failed with err,
// when its action is a deny: the block is held (proxy/unwritten) and the
// call refused as blocked. ok is false for any other action, which is
// refused as the state's failure says.
func (g *Guard) blockUnwritten(c *check, out round, err error) (v Verdict, ok bool) {
	a := c.a
	if out.block == nil {
		// The commit failed before its decision could be made (or
		// made it without a block): the evaluator alone says whether
		// this is a deny, on the memory every written commit left.
		g.mu.Lock()
		m := g.mem
		g.mu.Unlock()
		d := c.judge(ruling.StepOf(a.call(), c.pol.Principal, m.steps+1, m.failurePause))
		if d.Decision != evaluator.Block {
			return Verdict{}, false
		}
		out.verdict, out.block, out.show = g.hardBlock(a, d)
		if out.block == nil {
			return Verdict{}, false // no challenge could be made: refused as the state's failure
		}
	}
	if held := g.hold.Held(); held != nil {
		return g.heldVerdict(a, held, err), true // one block at a time: the first stands
	}
	out.verdict.Directive.Factors = append(out.verdict.Directive.Factors,
		"fail closed: "+refusal.StateProblem(err)+"; the block holds in this process until it is written")
	b := out.block
	written := round{verdict: out.verdict, show: out.show, block: b} // what is shown once written
	u := &unwritten.Block{Block: *b, Record: g.decisionRecord(a, out.verdict, c.began),
		Observed: func(cur *store.Block) {
			if cur == nil {
				g.observe(b, b.Operation)
			} else {
				g.observe(cur, "")
			}
		},
		Show: func(ctx context.Context) { g.shown(ctx, a, written) }}
	if out.show != nil {
		u.Challenge = &out.show.Challenge
	}
	g.mu.Lock()
	g.init()
	bg := g.bg
	g.mu.Unlock()
	if held := g.hold.Keep(bg, u, g.unwrittenLoop(), &g.running); held != u {
		return g.heldVerdict(a, held, err), true
	}
	g.log().Error("principal hard-blocked, but the block could not be written; it holds in this process and is written as soon as the state can be",
		"principal", b.Principal, "reason", b.Reason, "verification", b.VerificationID, "err", err)
	return g.heldVerdict(a, u, err), true
}

// unwrittenLoop is what proxy/unwritten reaches of the guard.
func (g *Guard) unwrittenLoop() unwritten.Loop {
	return unwritten.Loop{Commit: g.commitState, Log: g.log(), Within: recordWithin}
}

// heldVerdict refuses a as blocked by an unwritten block.
func (g *Guard) heldVerdict(a Action, u *unwritten.Block, err error) Verdict {
	b := u.Block
	b.CodeNotShown = true // not yet: it is shown once written
	return g.blockedVerdict(a, &b, "hard block: set "+b.BlockedAt.Format(time.RFC3339)+
		", not written yet ("+refusal.StateProblem(err)+"); it holds in this process until it is written")
}

// holdUnwritten writes the unwritten block u before a check decides;
// while it cannot be, the check is refused as blocked (held is true).
func (g *Guard) holdUnwritten(ctx context.Context, a Action, u *unwritten.Block) (v Verdict, held bool) {
	if err := g.hold.Write(ctx, u, g.unwrittenLoop()); err != nil {
		return g.heldVerdict(a, u, err), true
	}
	return Verdict{}, false // written: the check finds the block in the state
}
