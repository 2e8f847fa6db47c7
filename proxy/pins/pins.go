// Package pins defends against a server that changes a tool after the
// user trusted it (a "rug pull"): the first tools seen of each server are
// pinned in the state database; a later definition that differs, and a
// tool the server adds after that (a tool renamed is one removed and one
// added), is not believed until a human approves it, shown as a diff, and
// until then the client keeps seeing the pinned definition (or nothing)
// and calls to the tool are refused. A change that only takes away from
// what the model is offered (a parameter removed, a hint that makes the
// guard more careful) is accepted and audited without asking, provided
// the guard's own judgement of the tool (its category and risk, Judge) is
// not lowered: a server's word never lowers the guard's.
package pins

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// pinned are the members of a tool definition a change of which is a
// change of the tool: what the model reads (title, description), what it
// may send and gets back (schemas), and what the policy judges by
// (annotations). icons and _meta are presentation.
var pinned = []string{"title", "description", "inputSchema", "outputSchema", "annotations"}

// Canonical is a tool definition's pinned members in one canonical form
// (keys sorted, numbers as written), and its SHA-256.
func Canonical(raw json.RawMessage) (canon []byte, hash string, err error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, "", fmt.Errorf("a tool definition is not a JSON object: %w", err)
	}
	out := map[string]any{}
	for _, k := range pinned {
		v, ok := all[k]
		if !ok || string(v) == "null" {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		var x any
		if err := dec.Decode(&x); err != nil {
			return nil, "", fmt.Errorf("tool definition member %s: %w", k, err)
		}
		out[k] = x
	}
	canon, err = json.Marshal(out)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(canon)
	return canon, hex.EncodeToString(sum[:]), nil
}

// Diff shows a change from old to new definition, pinned members only,
// one per line.
func Diff(tool string, old, new json.RawMessage) string {
	return udiff.Unified(tool+" (approved)", tool+" (now)", pretty(old), pretty(new))
}

func pretty(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "" // no approved definition: a tool the server added
	}
	canon, _, err := Canonical(raw)
	if err != nil {
		return string(raw) + "\n"
	}
	var b bytes.Buffer
	if json.Indent(&b, canon, "", "  ") != nil {
		return string(canon) + "\n"
	}
	return b.String() + "\n"
}

// Judgement is the guard's own view of one tool definition: the category
// the catalog gives it, the base risk of what it does (its effects), and
// the risk the evaluator scores a call of it at (no arguments), under
// the configuration and policy in force; and what a human reviewing it
// at first sight is shown.
type Judgement struct {
	Category string
	Base     int
	Risk     int
	// Sight says how the tool is taken when its server is seen for the
	// first time: the zero value waits for a human's review.
	Sight Sight
	// Says is what the tool does, in plain words (effects.Model.Why).
	Says string
	// Concerns are what the human should look at, in plain words: what
	// the server claims and the guard does not believe, and what the
	// description scan found ("description: tells the assistant to ...").
	Concerns []string
	// Hide says a finding is certain enough that the tool stays out of
	// tools/list until a human approves it (an instruction aimed at the
	// model in its description, hidden Unicode).
	Hide bool
}

// Sight is how a tool seen at its server's first sight is taken.
type Sight uint8

const (
	// SightReview: the tool waits for one human review of its server
	// (as SSH asks about a new host key); it is listed, unless Hide,
	// and calls to it wait.
	SightReview Sight = iota
	// SightProfile: a shipped profile of a well-known server was made
	// from exactly this definition: pinned as it is.
	SightProfile
	// SightTrusted: the server's configuration trusts its first sight
	// (trust_first_sight): pinned as it is, as before reviews existed.
	SightTrusted
)

// AtLeast reports whether j guards at least as much as old: effects no
// less dangerous (by base risk: none < read < write < send < execute <
// delete) and a risk no lower.
func (j Judgement) AtLeast(old Judgement) bool { return j.Base >= old.Base && j.Risk >= old.Risk }

// Judge judges one definition (as the server sent it) of a server's tool.
type Judge func(server string, definition json.RawMessage) (Judgement, error)

// Narrows reports whether new may replace old without a human: it only
// takes away from what old offered the model (the same title,
// description, output schema and annotations but for the hints; the
// input schema the same but for properties removed), and the guard's own
// judgement of new is at least its judgement of old. Hints may move
// either way: one that raises the guard's judgement is accepted, one
// that lowers it (readOnlyHint added, destructiveHint dropped or
// cleared, openWorldHint cleared) waits for the human. judge nil (no
// judgement available): nothing narrows.
func Narrows(old, new json.RawMessage, judge func(json.RawMessage) (Judgement, error)) bool {
	if judge == nil || !offersLess(old, new) {
		return false
	}
	jo, err1 := judge(old)
	jn, err2 := judge(new)
	return err1 == nil && err2 == nil && jn.AtLeast(jo)
}

// offersLess reports whether new offers the model no more than old: the
// same title, description and output schema, the same annotations but
// for the hints (which the judgement weighs), and an input schema that is
// old's without some properties.
func offersLess(old, new json.RawMessage) bool {
	var o, n map[string]any
	oc, _, err1 := Canonical(old)
	nc, _, err2 := Canonical(new)
	if err1 != nil || err2 != nil || json.Unmarshal(oc, &o) != nil || json.Unmarshal(nc, &n) != nil {
		return false
	}
	for _, k := range []string{"title", "description", "outputSchema"} {
		if !equal(o[k], n[k]) {
			return false
		}
	}
	return sameButHints(o["annotations"], n["annotations"]) && schemaNarrows(o["inputSchema"], n["inputSchema"])
}

func equal(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// hints are the annotations that describe behaviour; the others (title)
// are text the model reads.
var hints = map[string]bool{"readOnlyHint": true, "destructiveHint": true, "idempotentHint": true, "openWorldHint": true}

// sameButHints: every annotation that is not a hint the same. A hint
// that is not a boolean is no hint the guard reads, and a change of it
// is a change.
func sameButHints(old, new any) bool {
	om, _ := old.(map[string]any)
	nm, _ := new.(map[string]any)
	if old != nil && om == nil || new != nil && nm == nil {
		return equal(old, new)
	}
	keys := map[string]bool{}
	for k := range om {
		keys[k] = true
	}
	for k := range nm {
		keys[k] = true
	}
	for k := range keys {
		if hints[k] && isBoolOrAbsent(om, k) && isBoolOrAbsent(nm, k) {
			continue
		}
		if !equal(om[k], nm[k]) {
			return false
		}
	}
	return true
}

func isBoolOrAbsent(m map[string]any, k string) bool {
	v, ok := m[k]
	if !ok {
		return true
	}
	_, isBool := v.(bool)
	return isBool
}

// schemaNarrows: new is old without some properties.
func schemaNarrows(old, new any) bool {
	om, _ := old.(map[string]any)
	nm, _ := new.(map[string]any)
	if om == nil || nm == nil {
		return equal(old, new)
	}
	for k, v := range nm {
		switch k {
		case "properties":
			op, _ := om[k].(map[string]any)
			np, _ := v.(map[string]any)
			for name, def := range np {
				if od, ok := op[name]; !ok || !equal(od, def) {
					return false
				}
			}
		case "required":
			or, _ := om[k].([]any)
			nr, _ := v.([]any)
			for _, r := range nr {
				if !slices.ContainsFunc(or, func(x any) bool { return equal(x, r) }) {
					return false
				}
			}
		default:
			if !equal(om[k], v) {
				return false
			}
		}
	}
	for k := range om {
		if _, ok := nm[k]; !ok && k != "properties" && k != "required" {
			return false // a constraint dropped (additionalProperties: false) widens
		}
	}
	return true
}

// Human is how a Pinner reaches the person at the machine: the
// principal's desk (proxy/desk, the guard's Desk), which asks in the
// principal's turn (one question at a time).
type Human interface {
	// Principal is the agent whose tools these are.
	Principal() string
	// AskAbout asks req; settled reports that the question no longer
	// needs an answer (approved elsewhere meanwhile).
	AskAbout(ctx context.Context, req verify.Request, settled func() bool) (verify.Answer, error)
}

// Pinner checks tool definitions against their pins and asks the human
// about changes. One Pinner serves every session of an aqlguard.
type Pinner struct {
	// State keeps the pins (either backend: replicas share them).
	State store.State
	// Human asks the human (in the principal's turn) and names the
	// principal; nil never asks (changes wait for `aqlguard pins approve`).
	Human   Human
	Log     *slog.Logger
	Process string
	// AskFor bounds how long a question about a change stays up.
	AskFor time.Duration
	// Judge is the guard's own judgement of a definition: a change is
	// accepted without a human only if it does not lower it. nil: every
	// change waits for a human.
	Judge Judge
	now   func() time.Time

	mu     sync.Mutex
	asking map[string]bool // server\x00tool: a question about it is up
	// reviewing are the first-sight reviews on screen, by server\x00:
	// each channel is closed when its question ends.
	reviewing map[string]chan struct{}
	// reviewed are, per server, the tools a human approved as they were
	// listed last (Result.Reviewed of the last Check).
	reviewed map[string]map[string]bool
	// refused are the changes (server\x00tool\x00hash) a human refused in
	// this process: not asked about again, however often the server sends
	// them (one that alternates between two definitions, each listing).
	refused  map[string]bool
	watchers map[int]func(server, tool string)
	nextW    int
}

// Watch calls fn after every change this Pinner approves (a session
// refreshes its tools); the returned func stops it.
func (p *Pinner) Watch(fn func(server, tool string)) (stop func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.watchers == nil {
		p.watchers = map[int]func(string, string){}
	}
	p.nextW++
	id := p.nextW
	p.watchers[id] = fn
	return func() {
		p.mu.Lock()
		delete(p.watchers, id)
		p.mu.Unlock()
	}
}

func (p *Pinner) notify(server, tool string) {
	p.mu.Lock()
	fns := slices.Collect(maps.Values(p.watchers))
	p.mu.Unlock()
	for _, fn := range fns {
		fn(server, tool)
	}
}

// Result is what a server's tools are to its client after the check.
type Result struct {
	Tools []*mcp.Tool
	Raws  []json.RawMessage
	// Pending names the tools whose change waits for a human: the client
	// sees their approved definition (or, at first sight, the definition
	// under review), and calls to them are refused.
	Pending map[string]bool
	// Reviewed names the tools a human approved as they are now (at a
	// first-sight review, or a change since): their server's word may
	// then inform the guard (effects.Config.Reviewed).
	Reviewed map[string]bool
}

func (p *Pinner) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

func (p *Pinner) principal() string {
	if p.Human != nil {
		return p.Human.Principal()
	}
	return ""
}

// Check pins the tools a server offers now. The tools of a server seen
// for the first time are pinned as they are; afterwards, unchanged and
// narrowed tools pass, changed ones are replaced by their approved
// definition and marked pending, and tools the server added are withheld
// until a human approves them. Every pin written is audited, in the same
// transaction. A listing that changes nothing reads the state and writes
// nothing.
func (p *Pinner) Check(ctx context.Context, server string, tools []*mcp.Tool, raws []json.RawMessage) (Result, error) {
	now := p.clock()
	var plan checkPlan
	read := func(v store.View) (err error) {
		plan, err = p.plan(v, server, tools, raws, now)
		return err
	}
	if err := p.State.Load(ctx, read); err != nil {
		return Result{}, fmt.Errorf("tool pins: %w", err)
	}
	if len(plan.writes) > 0 {
		// Planned again inside the commit: another process (replica) may
		// have pinned or approved meanwhile.
		_, err := p.State.Commit(ctx, func(v store.View) (store.Changes, error) {
			if err := read(v); err != nil {
				return store.Changes{}, err
			}
			var c store.Changes
			for _, w := range plan.writes {
				c.Pins = append(c.Pins, w.pin)
				c.Records = append(c.Records, p.record(now, p.principal(), server, w.pin.Tool, w.result, w.hash))
			}
			return c, nil
		})
		if err != nil {
			return Result{}, fmt.Errorf("tool pins: %w", err)
		}
	}
	for _, a := range plan.asks {
		what := "a server changed a tool since it was approved; the change waits for a human"
		if a.old == nil {
			what = "a server added a tool since its tools were approved; the tool waits for a human"
		}
		p.Log.Warn(what, "server", server, "tool", a.tool, "approve", "aqlguard pins approve "+server+" "+a.tool)
		go p.ask(server, a.tool, a.old, a.new, a.hash, a.judgement)
	}
	p.mu.Lock()
	if p.reviewed == nil {
		p.reviewed = map[string]map[string]bool{}
	}
	p.reviewed[server] = plan.res.Reviewed
	p.mu.Unlock()
	if len(plan.reviews) > 0 {
		hidden := 0
		for _, r := range plan.reviews {
			if r.judgement.Hide {
				hidden++
			}
		}
		p.Log.Warn("a server seen for the first time: its tools wait for a human's review", "server", server,
			"tools", len(plan.reviews), "not listed meanwhile", hidden, "approve", "aqlguard pins approve "+server)
		p.startReview(server, plan.reviews)
	}
	return plan.res, nil
}

// checkPlan is what a listing does to the pins: the result, the pins to
// write (each with its audit line), the questions to ask.
type checkPlan struct {
	res    Result
	writes []pinWrite
	asks   []ask
	// reviews are the tools of a server seen for the first time that
	// wait for one human review of the server.
	reviews []reviewItem
}

// reviewItem is one tool in a first-sight review.
type reviewItem struct {
	tool, hash string
	judgement  Judgement
}

type pinWrite struct {
	pin          store.Pin
	result, hash string
}

type ask struct {
	tool      string
	old, new  json.RawMessage // old nil: a tool the server added
	hash      string
	judgement Judgement
}

// plan decides, reading the pins in v, what a listing of server's tools
// does.
func (p *Pinner) plan(v store.View, server string, tools []*mcp.Tool, raws []json.RawMessage, now time.Time) (checkPlan, error) {
	plan := checkPlan{res: Result{Pending: map[string]bool{}, Reviewed: map[string]bool{}}}
	known, err := v.Pins(server)
	if err != nil {
		return plan, err
	}
	// A server none of whose tools is approved is seen for the first
	// time (or its pins were reset, or its first review is still open):
	// what it offers now is reviewed by a human, unless a profile or its
	// configuration vouches for a tool.
	firstSight := !slices.ContainsFunc(known, func(k store.Pin) bool { return k.Hash != "" })
	judge, err := p.scanningJudge(v, server, tools)
	if err != nil {
		return plan, err
	}
	keep := func(t *mcp.Tool, raw json.RawMessage) {
		plan.res.Tools, plan.res.Raws = append(plan.res.Tools, t), append(plan.res.Raws, raw)
	}
	write := func(pin store.Pin, result, hash string) {
		plan.writes = append(plan.writes, pinWrite{pin, result, hash})
	}
	review := func(t *mcp.Tool, raw json.RawMessage, hash string, j Judgement, pin *store.Pin) {
		if pin == nil || pin.Pending == nil || pin.Pending.Hash != hash || !pin.Pending.Review {
			np := store.Pin{Server: server, Tool: t.Name, FirstSeen: now}
			if pin != nil {
				np = pin.Clone()
			}
			np.Pending = &store.PendingChange{Hash: hash, Definition: raw, SeenAt: now, Review: true}
			write(np, "seen at first sight: waiting for a human's review", hash)
		}
		if !j.Hide {
			keep(t, raw)
		}
		plan.res.Pending[t.Name] = true
		plan.reviews = append(plan.reviews, reviewItem{tool: t.Name, hash: hash, judgement: j})
	}
	seen := make(map[string]bool, len(tools))
	for i, t := range tools {
		if seen[t.Name] {
			// A second definition of one name in one listing: the
			// catalog serves the first, and the first is what is pinned.
			continue
		}
		seen[t.Name] = true
		raw := raws[i]
		_, hash, err := Canonical(raw)
		if err != nil {
			return plan, err
		}
		pin, err := v.Pin(server, t.Name)
		if err != nil {
			return plan, err
		}
		j := sightOf(judge, raw)
		switch {
		case pin != nil && pin.Hash == "" && pin.Pending != nil && pin.Pending.Review,
			(pin == nil || pin.Hash == "") && firstSight:
			// Seen at the server's first sight (now, or its review is
			// still open).
			switch {
			case j.Hide || j.Sight == SightReview:
				review(t, raw, hash, j, pin)
			case j.Sight == SightProfile:
				write(store.Pin{Server: server, Tool: t.Name, Hash: hash, Definition: raw, FirstSeen: now, ApprovedAt: now,
					ApprovedBy: "profile"}, "pinned at first sight: a shipped profile was made from this definition", hash)
				keep(t, raw)
			default:
				write(store.Pin{Server: server, Tool: t.Name, Hash: hash, Definition: raw, FirstSeen: now, ApprovedAt: now,
					ApprovedBy: "first sight"}, "pinned at first sight", hash)
				keep(t, raw)
			}
		case pin == nil || pin.Hash == "":
			// Added after the server's tools were approved: not listed
			// (there is no approved definition to show) until a human
			// approves it.
			if pin == nil || pin.Pending == nil || pin.Pending.Hash != hash || pin.Pending.Review {
				np := store.Pin{Server: server, Tool: t.Name, FirstSeen: now}
				if pin != nil {
					np.FirstSeen = pin.FirstSeen
				}
				np.Pending = &store.PendingChange{Hash: hash, Definition: raw, SeenAt: now}
				write(np, "added after the server's tools were approved: waiting for a human", hash)
			}
			plan.asks = append(plan.asks, ask{tool: t.Name, new: raw, hash: hash, judgement: j})
		case pin.Hash == hash && j.Hide && !pin.Reviewed:
			// Approved without a human (a trusted first sight, or before
			// descriptions were scanned), and the scan finds an
			// instruction aimed at the model in it: not listed until a
			// human has looked.
			review(t, raw, hash, j, pin)
		case pin.Hash == hash:
			if pin.Pending != nil { // the server went back to what was approved
				back := *pin
				back.Pending = nil
				write(back, "back to the approved definition", hash)
			}
			plan.res.Reviewed[t.Name] = pin.Reviewed
			keep(t, raw)
		case !j.Hide && Narrows(pin.Definition, raw, p.judgeFor(server)):
			narrowed := *pin
			narrowed.Hash, narrowed.Definition, narrowed.ApprovedAt, narrowed.ApprovedBy, narrowed.Pending = hash, raw, now, "narrowed", nil
			write(narrowed, "changed, only narrowing: accepted", hash)
			plan.res.Reviewed[t.Name] = pin.Reviewed
			keep(t, raw)
		default:
			if pin.Pending == nil || pin.Pending.Hash != hash {
				changed := *pin
				changed.Pending = &store.PendingChange{Hash: hash, Definition: raw, SeenAt: now}
				write(changed, "changed: waiting for a human", hash)
			}
			var old mcp.Tool
			if err := json.Unmarshal(pin.Definition, &old); err != nil {
				return plan, fmt.Errorf("the pinned definition of %s.%s does not decode: %w", server, t.Name, err)
			}
			keep(&old, pin.Definition)
			plan.res.Pending[t.Name] = true
			plan.asks = append(plan.asks, ask{tool: t.Name, old: pin.Definition, new: raw, hash: hash, judgement: j})
		}
	}
	return plan, nil
}

// sightOf is the judgement of a definition at first sight; without a
// judge, or one that fails, the tool waits for a human.
func sightOf(judge func(json.RawMessage) (Judgement, error), raw json.RawMessage) Judgement {
	if judge == nil {
		return Judgement{Sight: SightReview}
	}
	j, err := judge(raw)
	if err != nil {
		return Judgement{Sight: SightReview, Hide: j.Hide, Concerns: append(j.Concerns, "aqlguard could not judge this definition")}
	}
	return j
}

// judgeFor is the Pinner's judge bound to one server; nil without one.
func (p *Pinner) judgeFor(server string) func(json.RawMessage) (Judgement, error) {
	if p.Judge == nil {
		return nil
	}
	return func(def json.RawMessage) (Judgement, error) { return p.Judge(server, def) }
}

// maxRefused bounds the refusals a Pinner remembers.
const maxRefused = 1024

// ask puts a pending change to the human, one question per tool at a
// time, never again one the human refused in this process; an approval
// is recorded as the human's.
func (p *Pinner) ask(server, tool string, old, new json.RawMessage, hash string, j Judgement) {
	if p.Human == nil {
		return
	}
	// One question per tool at a time: a server that changes a tool at
	// every listing gets one question up, not one per listing.
	key, change := server+"\x00"+tool, server+"\x00"+tool+"\x00"+hash
	p.mu.Lock()
	if p.asking == nil {
		p.asking = map[string]bool{}
	}
	if p.asking[key] || p.refused[change] {
		p.mu.Unlock()
		return
	}
	p.asking[key] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.asking, key)
		p.mu.Unlock()
	}()
	wait := p.AskFor
	if wait <= 0 {
		wait = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req := verify.Request{Kind: verify.KindConfirmation, Agent: p.principal(), Operation: verify.OperationToolChange,
		Server: server, Tool: tool, Action: server + "." + tool + " changed its definition",
		Reason: "the server changed this tool since it was approved; a changed tool can carry new instructions for the agent or do something else than before",
		Detail: Diff(tool, old, new) + concerns(j), ExpiresAt: p.clock().Add(wait)}
	if old == nil {
		req.Action = server + " added the tool " + tool
		req.Reason = "the server offers a tool it did not offer when its tools were approved; a new tool can carry instructions for the agent " +
			"or do anything (a tool renamed is one removed and one added)"
	}
	settled := func() bool {
		pin, err := p.load(ctx, server, tool)
		return err != nil || pin == nil || pin.Pending == nil || pin.Pending.Hash != hash
	}
	answer, err := p.Human.AskAbout(ctx, req, settled)
	if err != nil {
		p.Log.Warn("could not ask a human about a changed tool; it waits for `aqlguard pins approve`", "server", server, "tool", tool, "err", err)
		return
	}
	switch answer {
	case verify.Allow:
		if err := p.Approve(context.Background(), server, tool, hash, "human"); err != nil {
			p.Log.Error("the human approved a changed tool, but the approval could not be recorded", "server", server, "tool", tool, "err", err)
			return
		}
		p.notify(server, tool)
	case verify.Deny:
		p.Log.Warn("the human refused a changed tool; it stays unusable", "server", server, "tool", tool)
		p.mu.Lock()
		if p.refused == nil || len(p.refused) >= maxRefused {
			p.refused = map[string]bool{} // bounded: the oldest refusals are asked about again
		}
		p.refused[change] = true
		p.mu.Unlock()
		_ = store.AppendRecords(context.Background(), p.State, p.record(p.clock(), p.principal(), server, tool, "change refused by a human", hash))
	}
}

// record is the audit record of what became of a pin.
func (p *Pinner) record(at time.Time, principal, server, tool, result, hash string) store.Record {
	r := store.NewRecord(at, store.KindPin, principal, p.Process, "")
	r.Server, r.Operation, r.Result, r.Decision = server, "pin "+server+"."+tool, result, hash
	return r
}

func (p *Pinner) load(ctx context.Context, server, tool string) (*store.Pin, error) {
	var pin *store.Pin
	err := p.State.Load(ctx, func(v store.View) (err error) { pin, err = v.Pin(server, tool); return })
	return pin, err
}

// ErrNoChange says there is no pending change to approve (any more).
var ErrNoChange = fmt.Errorf("no change of that tool waits for approval")

// Approve makes a pending change the approved definition. hash, when not
// empty, must be the pending change's (what the human saw).
func (p *Pinner) Approve(ctx context.Context, server, tool, hash, by string) error {
	_, err := p.State.Commit(ctx, func(v store.View) (store.Changes, error) {
		pin, err := v.Pin(server, tool)
		if err != nil {
			return store.Changes{}, err
		}
		if pin == nil || pin.Pending == nil || hash != "" && pin.Pending.Hash != hash {
			return store.Changes{}, ErrNoChange
		}
		now := p.clock()
		approved := pin.Clone() // the view's own stays as it was read
		approved.Hash, approved.Definition, approved.ApprovedAt, approved.ApprovedBy = pin.Pending.Hash, pin.Pending.Definition, now, by
		approved.Pending, approved.Reviewed = nil, true
		return store.Changes{Pins: []store.Pin{approved},
			Records: []store.Record{p.record(now, p.principal(), server, tool, "change approved by "+by, approved.Hash)}}, nil
	})
	return err
}

// Reset forgets the pins of server (every server when ""), or of one of
// its tools: the next definition each sends is pinned as it is. Each
// forgotten pin is audited with who reset it. It returns how many went.
func (p *Pinner) Reset(ctx context.Context, server, tool, by string) (int, error) {
	n := 0
	_, err := p.State.Commit(ctx, func(v store.View) (store.Changes, error) {
		n = 0 // decide may run again
		list, err := v.Pins(server)
		if err != nil {
			return store.Changes{}, err
		}
		var c store.Changes
		for _, pin := range list {
			if tool != "" && pin.Tool != tool {
				continue
			}
			c.Unpin = append(c.Unpin, store.PinKey{Server: pin.Server, Tool: pin.Tool})
			c.Records = append(c.Records, p.record(p.clock(), "admin", pin.Server, pin.Tool, "reset by "+by, ""))
			n++
		}
		return c, nil
	})
	return n, err
}

// Pending reports whether a change of the tool waits for a human, reading
// the state database (an approval may come from another process).
func (p *Pinner) Pending(ctx context.Context, server, tool string) (bool, error) {
	pin, err := p.load(ctx, server, tool)
	if err != nil {
		return true, err // fail closed
	}
	return pin != nil && pin.Pending != nil, nil
}

// Names lists tool names of a result, sorted (for logs).
func (r Result) Names() []string {
	return slices.Sorted(maps.Keys(r.Pending))
}
