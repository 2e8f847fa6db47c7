package pins

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aqlguard/aqlguard/injection"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// A server seen for the first time is reviewed once, as SSH asks about
// a new host key: one question per server lists what each of its tools
// can do (the guard's own reading: effects from its schema and
// description, or a guess from its name, said as a guess), what the
// server claims that the guard does not believe, and what the
// description scan found. Until a human approves, the tools are listed
// (but for those the scan hides) and calls to them wait; a tool a
// shipped profile was made from, or a server whose configuration trusts
// its first sight, is not asked about.

// concerns are a judgement's concerns as lines under a question's
// detail ("" for none).
func concerns(j Judgement) string {
	if len(j.Concerns) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nLook at:\n")
	for _, c := range j.Concerns {
		b.WriteString("  ! " + c + "\n")
	}
	return b.String()
}

// ReviewDetail is what a first-sight review shows of a server's tools:
// each tool, what it does, and what to look at.
func ReviewDetail(items []reviewItem) string {
	sorted := append([]reviewItem(nil), items...)
	sort.Slice(sorted, func(i, k int) bool { return sorted[i].tool < sorted[k].tool })
	var b strings.Builder
	for _, it := range sorted {
		b.WriteString(it.tool)
		if it.judgement.Hide {
			b.WriteString(" (not shown to the agent until you approve)")
		}
		b.WriteString("\n  " + firstNonEmpty(it.judgement.Says, "what it does is not known") + "\n")
		for _, c := range it.judgement.Concerns {
			b.WriteString("  ! " + c + "\n")
		}
	}
	return b.String()
}

func firstNonEmpty(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// startReview puts a server's first-sight review to the human in the
// background, one question per server at a time, never again for the
// definitions the human refused in this process, and returns a channel
// closed when the question on screen for the server ends (nil when none
// is: no human to ask, or the human refused these). An approval
// approves exactly the definitions shown.
func (p *Pinner) startReview(server string, items []reviewItem) <-chan struct{} {
	if p.Human == nil {
		return nil
	}
	key := server + "\x00"
	shown := map[string]string{}
	for _, it := range items {
		shown[it.tool] = it.hash
	}
	refusal := key + reviewKey(shown)
	p.mu.Lock()
	defer p.mu.Unlock()
	if done, up := p.reviewing[key]; up {
		return done
	}
	if p.refused[refusal] {
		return nil
	}
	if p.reviewing == nil {
		p.reviewing = map[string]chan struct{}{}
	}
	done := make(chan struct{})
	p.reviewing[key] = done
	go func() {
		defer func() {
			p.mu.Lock()
			delete(p.reviewing, key)
			p.mu.Unlock()
			close(done)
		}()
		p.askReview(server, items, shown, refusal)
	}()
	return done
}

// reviewUp is the channel of the review question on screen for server
// (nil: none is).
func (p *Pinner) reviewUp(server string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reviewing[server+"\x00"]
}

// askReview asks the human the review startReview claimed.
func (p *Pinner) askReview(server string, items []reviewItem, shown map[string]string, refusal string) {
	wait := p.AskFor
	if wait <= 0 {
		wait = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req := verify.Request{Kind: verify.KindConfirmation, Agent: p.principal(), Operation: verify.OperationToolReview,
		Server: server, Action: fmt.Sprintf("the %s server is new: its %d tools wait for your review", server, len(items)),
		Reason: "a server aqlguard has not seen before: no shipped profile was made from its tools, so what each can do is " +
			"aqlguard's reading of what the server says, and a tool's description is read by the agent as instructions",
		Detail: ReviewDetail(items), ExpiresAt: p.clock().Add(wait)}
	settled := func() bool {
		pending, err := p.reviewPending(ctx, server, shown)
		return err != nil || !pending
	}
	answer, err := p.Human.AskAbout(ctx, req, settled)
	if err != nil {
		p.Log.Warn("could not ask a human to review a new server; its tools wait for `aqlguard pins approve`", "server", server, "err", err)
		return
	}
	switch answer {
	case verify.Allow:
		n, err := p.ApproveReview(context.Background(), server, shown, "human")
		if err != nil {
			p.Log.Error("the human approved a new server's tools, but the approval could not be recorded", "server", server, "err", err)
			return
		}
		p.Log.Info("a human reviewed a new server's tools", "server", server, "approved", n)
		for tool := range shown {
			p.notify(server, tool)
		}
	case verify.Deny:
		p.Log.Warn("the human refused a new server's tools; they stay unusable", "server", server)
		p.mu.Lock()
		if p.refused == nil || len(p.refused) >= maxRefused {
			p.refused = map[string]bool{}
		}
		p.refused[refusal] = true
		p.mu.Unlock()
		_ = store.AppendRecords(context.Background(), p.State, p.record(p.clock(), p.principal(), server, "*", "first-sight review refused by a human", ""))
	}
}

// reviewKey names the set of definitions a review showed.
func reviewKey(shown map[string]string) string {
	keys := make([]string, 0, len(shown))
	for tool, hash := range shown {
		keys = append(keys, tool+"="+hash)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// reviewPending reports whether any of the definitions shown still waits
// for its review.
func (p *Pinner) reviewPending(ctx context.Context, server string, shown map[string]string) (bool, error) {
	pending := false
	err := p.State.Load(ctx, func(v store.View) error {
		for tool, hash := range shown {
			pin, err := v.Pin(server, tool)
			if err != nil {
				return err
			}
			if pin != nil && pin.Pending != nil && pin.Pending.Review && pin.Pending.Hash == hash {
				pending = true
			}
		}
		return nil
	})
	return pending, err
}

// ApproveReview approves a server's tools waiting for their first-sight
// review: those of shown (tool → the hash the human saw; nil: every one
// that waits, as `aqlguard pins approve SERVER` does). It returns how
// many it approved.
func (p *Pinner) ApproveReview(ctx context.Context, server string, shown map[string]string, by string) (int, error) {
	n := 0
	_, err := p.State.Commit(ctx, func(v store.View) (store.Changes, error) {
		n = 0 // decide may run again
		list, err := v.Pins(server)
		if err != nil {
			return store.Changes{}, err
		}
		now := p.clock()
		var c store.Changes
		for _, pin := range list {
			if pin.Pending == nil || !pin.Pending.Review {
				continue
			}
			if shown != nil && shown[pin.Tool] != pin.Pending.Hash {
				continue
			}
			approved := pin.Clone()
			approved.Hash, approved.Definition, approved.ApprovedAt, approved.ApprovedBy = pin.Pending.Hash, pin.Pending.Definition, now, by
			approved.Pending, approved.Reviewed = nil, true
			c.Pins = append(c.Pins, approved)
			c.Records = append(c.Records, p.record(now, p.principal(), server, pin.Tool, "reviewed at first sight, approved by "+by, approved.Hash))
			n++
		}
		if n == 0 {
			return store.Changes{}, ErrNoChange
		}
		return c, nil
	})
	return n, err
}

// Waiting reports whether calls to a server's tool wait for a human, and
// whether for the server's first-sight review (else for a change),
// reading the state (an approval may come from another process).
func (p *Pinner) Waiting(ctx context.Context, server, tool string) (waits, review bool, err error) {
	pin, err := p.load(ctx, server, tool)
	if err != nil {
		return true, false, err // fail closed
	}
	if pin == nil || pin.Pending == nil {
		return false, false, nil
	}
	return true, pin.Pending.Review, nil
}

// RemindReview asks the human again about a server whose first-sight
// review is still open and not on screen (the first question timed out
// or could not be asked): as SSH asks at every connection, a call to a
// tool under review brings the question back. It returns at once.
func (p *Pinner) RemindReview(ctx context.Context, server string) {
	if p.reviewUp(server) != nil || p.Human == nil {
		return
	}
	var items []reviewItem
	err := p.State.Load(ctx, func(v store.View) error {
		list, err := v.Pins(server)
		if err != nil {
			return err
		}
		var tools []*mcp.Tool
		for _, pin := range list {
			tools = append(tools, &mcp.Tool{Name: pin.Tool})
		}
		judge, err := p.scanningJudge(v, server, tools)
		if err != nil {
			return err
		}
		items = items[:0]
		for _, pin := range list {
			if pin.Pending != nil && pin.Pending.Review {
				items = append(items, reviewItem{tool: pin.Tool, hash: pin.Pending.Hash, judgement: sightOf(judge, pin.Pending.Definition)})
			}
		}
		return nil
	})
	if err != nil || len(items) == 0 {
		return
	}
	p.startReview(server, items)
}

// WaitApproved waits at most wait for a tool's pending change or review
// to be approved, and reports whether it was. An approval in this
// process wakes it at once; one made elsewhere (`aqlguard pins approve`,
// another process on the state) is seen within half a second.
func (p *Pinner) WaitApproved(ctx context.Context, server, tool string, wait time.Duration) bool {
	changed := make(chan struct{}, 1)
	stop := p.Watch(func(s, _ string) {
		if s == server {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	defer stop()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	poll := time.NewTicker(500 * time.Millisecond)
	defer poll.Stop()
	asked := p.reviewUp(server) // the question a human may answer while we wait
	if asked == nil {
		// No question is up (the human refused these, or none can be
		// asked): only an approval already given counts.
		waits, _, err := p.Waiting(ctx, server, tool)
		return err == nil && !waits
	}
	for {
		if waits, _, err := p.Waiting(ctx, server, tool); err == nil && !waits {
			return true
		}
		select {
		case <-changed:
		case <-poll.C:
		case <-asked:
			// The question ended (refused, unanswered): one more look,
			// for an approval given just then.
			waits, _, err := p.Waiting(ctx, server, tool)
			return err == nil && !waits
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Reviewed reports whether a human approved a server's tool as the
// server listed it last (in this process's last Check of it).
func (p *Pinner) Reviewed(server, tool string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reviewed[server][tool]
}

// scanningJudge is the Pinner's judge bound to server, with each
// definition's description scan added to its judgement: what the scan
// finds is shown to the human (Concerns), and a High finding keeps the
// tool out of tools/list until a human approves it (Hide). The tools of
// the other servers on the state (every server's pins) are what an
// instruction to use another server's tool is recognised by. It scans
// every listing, so a change is scanned as it is seen.
func (p *Pinner) scanningJudge(v store.View, server string, tools []*mcp.Tool) (func(json.RawMessage) (Judgement, error), error) {
	all, err := v.Pins("")
	if err != nil {
		return nil, err
	}
	var others, own []string
	for _, pin := range all {
		if pin.Server != server {
			others = append(others, pin.Tool)
		}
	}
	for _, t := range tools {
		own = append(own, t.Name)
	}
	scanner := injection.New(injection.Options{OtherTools: others, OwnTools: own})
	judge := p.judgeFor(server)
	return func(raw json.RawMessage) (Judgement, error) {
		var j Judgement
		var err error
		if judge != nil {
			j, err = judge(raw)
		}
		findings, serr := scanner.ScanToolJSON(raw)
		if serr != nil {
			// Not a definition the scanner can read: a human looks.
			return Judgement{Sight: SightReview, Hide: true, Concerns: []string{"aqlguard could not read this definition"}}, nil
		}
		for _, f := range findings {
			where := f.Where
			if where == "" {
				where = "definition"
			}
			say := where + ": " + f.Say
			if f.Confidence == injection.High {
				j.Hide = true
				say = "instructions for the model? " + say
			}
			j.Concerns = append(j.Concerns, say)
		}
		if judge == nil {
			// No judgement of the guard's own: nothing vouches for the
			// tool at first sight.
			j.Sight = SightReview
		}
		return j, err
	}, nil
}
