// Package pins defends against a server that changes a tool after the
// user trusted it (a "rug pull"): the first definition seen of each tool
// is pinned in the state database; a later definition that differs is
// not believed until a human approves the change, shown as a diff, and
// until then the client keeps seeing the pinned definition and calls to
// the tool are refused. A change that only narrows what the tool may do
// (readOnlyHint added, a parameter removed) is accepted and audited
// without asking.
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

// Narrows reports whether new only takes away from what old allowed:
// the same title, description and output schema; each annotation the
// same or safer (readOnlyHint or idempotentHint set, destructiveHint or
// openWorldHint cleared); the input schema the same but for properties
// removed (and no longer required).
func Narrows(old, new json.RawMessage) bool {
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
	return annotationsNarrow(o["annotations"], n["annotations"]) && schemaNarrows(o["inputSchema"], n["inputSchema"])
}

func equal(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// annotationsNarrow: every hint the same or moved to its safe side. A
// hint absent means its MCP default (readOnly false, destructive true,
// idempotent false, openWorld true).
func annotationsNarrow(old, new any) bool {
	om, _ := old.(map[string]any)
	nm, _ := new.(map[string]any)
	safe := map[string]bool{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
	dflt := map[string]bool{"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true}
	keys := map[string]bool{}
	for k := range om {
		keys[k] = true
	}
	for k := range nm {
		keys[k] = true
	}
	for k := range keys {
		s, isHint := safe[k]
		if !isHint {
			if !equal(om[k], nm[k]) { // title and the like
				return false
			}
			continue
		}
		ov, nv := hint(om, k, dflt[k]), hint(nm, k, dflt[k])
		if ov != nv && nv != s {
			return false
		}
	}
	return true
}

func hint(m map[string]any, k string, dflt bool) bool {
	if b, ok := m[k].(bool); ok {
		return b
	}
	return dflt
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

// Human is how a Pinner reaches the person at the machine: the guard,
// which asks in the principal's turn (one question at a time).
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
	Store *store.Store
	// Human asks the human (in the principal's turn) and names the
	// principal; nil never asks (changes wait for `aqlguard pins approve`).
	Human   Human
	Log     *slog.Logger
	Process string
	// AskFor bounds how long a question about a change stays up.
	AskFor time.Duration
	now    func() time.Time

	mu       sync.Mutex
	asking   map[string]bool // server\x00tool\x00hash being asked about
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
	// sees their approved definition, and calls to them are refused.
	Pending map[string]bool
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

// Check pins the tools a server offers now: new tools are pinned as they
// are, unchanged and narrowed ones pass, changed ones are replaced by
// their approved definition and marked pending. Every pin written is
// audited, in the same transaction.
func (p *Pinner) Check(ctx context.Context, server string, tools []*mcp.Tool, raws []json.RawMessage) (Result, error) {
	res := Result{Pending: map[string]bool{}}
	now := p.clock()
	type ask struct {
		tool     string
		old, new json.RawMessage
		hash     string
	}
	var asks []ask
	err := p.Store.Update(ctx, func(tx *store.Tx) error {
		res.Tools, res.Raws, asks = nil, nil, nil
		clear(res.Pending)
		for i, t := range tools {
			raw := raws[i]
			_, hash, err := Canonical(raw)
			if err != nil {
				return err
			}
			pin, err := tx.Pin(server, t.Name)
			if err != nil {
				return err
			}
			record := func(result string) error {
				err := tx.Append(store.Record{Time: now, Kind: "pin", Principal: p.principal(), Process: p.Process,
					Server: server, Operation: "pin " + server + "." + t.Name, Result: result, Decision: hash})
				return err
			}
			switch {
			case pin == nil:
				if err := tx.PutPin(store.Pin{Server: server, Tool: t.Name, Hash: hash, Definition: raw,
					FirstSeen: now, ApprovedAt: now, ApprovedBy: "first sight"}); err != nil {
					return err
				}
				if err := record("pinned at first sight"); err != nil {
					return err
				}
			case pin.Hash == hash:
				if pin.Pending != nil { // the server went back to what was approved
					pin.Pending = nil
					if err := tx.PutPin(*pin); err != nil {
						return err
					}
					if err := record("back to the approved definition"); err != nil {
						return err
					}
				}
			case Narrows(pin.Definition, raw):
				pin.Hash, pin.Definition, pin.ApprovedAt, pin.ApprovedBy, pin.Pending = hash, raw, now, "narrowed", nil
				if err := tx.PutPin(*pin); err != nil {
					return err
				}
				if err := record("changed, only narrowing: accepted"); err != nil {
					return err
				}
			default:
				if pin.Pending == nil || pin.Pending.Hash != hash {
					pin.Pending = &store.PendingChange{Hash: hash, Definition: raw, SeenAt: now}
					if err := tx.PutPin(*pin); err != nil {
						return err
					}
					if err := record("changed: waiting for a human"); err != nil {
						return err
					}
				}
				var old mcp.Tool
				if err := json.Unmarshal(pin.Definition, &old); err != nil {
					return fmt.Errorf("the pinned definition of %s.%s does not decode: %w", server, t.Name, err)
				}
				res.Tools, res.Raws = append(res.Tools, &old), append(res.Raws, pin.Definition)
				res.Pending[t.Name] = true
				asks = append(asks, ask{tool: t.Name, old: pin.Definition, new: raw, hash: hash})
				continue
			}
			res.Tools, res.Raws = append(res.Tools, t), append(res.Raws, raw)
		}
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("tool pins: %w", err)
	}
	for _, a := range asks {
		p.Log.Warn("a server changed a tool since it was approved; the change waits for a human",
			"server", server, "tool", a.tool, "approve", "aqlguard pins approve "+server+" "+a.tool)
		go p.ask(server, a.tool, a.old, a.new, a.hash)
	}
	return res, nil
}

// ask puts a pending change to the human, once per change in this
// process; an approval is recorded as the human's.
func (p *Pinner) ask(server, tool string, old, new json.RawMessage, hash string) {
	if p.Human == nil {
		return
	}
	key := server + "\x00" + tool + "\x00" + hash
	p.mu.Lock()
	if p.asking == nil {
		p.asking = map[string]bool{}
	}
	if p.asking[key] {
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
		Detail: Diff(tool, old, new), ExpiresAt: p.clock().Add(wait)}
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
		_ = p.Store.Append(context.Background(), store.Record{Time: p.clock(), Kind: "pin", Principal: p.principal(), Process: p.Process,
			Server: server, Operation: "pin " + server + "." + tool, Result: "change refused by a human", Decision: hash})
	}
}

func (p *Pinner) load(ctx context.Context, server, tool string) (*store.Pin, error) {
	var pin *store.Pin
	err := p.Store.View(ctx, func(tx *store.Tx) (err error) { pin, err = tx.Pin(server, tool); return })
	return pin, err
}

// ErrNoChange says there is no pending change to approve (any more).
var ErrNoChange = fmt.Errorf("no change of that tool waits for approval")

// Approve makes a pending change the approved definition. hash, when not
// empty, must be the pending change's (what the human saw).
func (p *Pinner) Approve(ctx context.Context, server, tool, hash, by string) error {
	return p.Store.Update(ctx, func(tx *store.Tx) error {
		pin, err := tx.Pin(server, tool)
		if err != nil {
			return err
		}
		if pin == nil || pin.Pending == nil || hash != "" && pin.Pending.Hash != hash {
			return ErrNoChange
		}
		now := p.clock()
		pin.Hash, pin.Definition, pin.ApprovedAt, pin.ApprovedBy = pin.Pending.Hash, pin.Pending.Definition, now, by
		pin.Pending = nil
		if err := tx.PutPin(*pin); err != nil {
			return err
		}
		err = tx.Append(store.Record{Time: now, Kind: "pin", Principal: p.principal(), Process: p.Process,
			Server: server, Operation: "pin " + server + "." + tool, Result: "change approved by " + by, Decision: pin.Hash})
		return err
	})
}

// Reset forgets the pins of server (every server when ""), or of one of
// its tools: the next definition each sends is pinned as it is. Each
// forgotten pin is audited with who reset it. It returns how many went.
func (p *Pinner) Reset(ctx context.Context, server, tool, by string) (int, error) {
	n := 0
	err := p.Store.Update(ctx, func(tx *store.Tx) error {
		n = 0
		list, err := tx.Pins(server)
		if err != nil {
			return err
		}
		for _, pin := range list {
			if tool != "" && pin.Tool != tool {
				continue
			}
			if err := tx.DeletePin(pin.Server, pin.Tool); err != nil {
				return err
			}
			if err := tx.Append(store.Record{Time: p.clock(), Kind: "pin", Principal: "admin", Process: p.Process,
				Server: pin.Server, Operation: "pin " + pin.Server + "." + pin.Tool, Result: "reset by " + by}); err != nil {
				return err
			}
			n++
		}
		return nil
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
