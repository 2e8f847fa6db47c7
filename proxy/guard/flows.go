package guard

import (
	"encoding/json"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/flows"
	"github.com/aqlguard/aqlguard/store"
)

// Each session of the principal has a flows.Session: what it has read
// that counts for where data may go. A new session starts clean; an
// ended one is forgotten; the human may clear one (ForgetFlows).

// sessionFlow is a session's flows and when it was last used.
type sessionFlow struct {
	flows.Session
	used time.Time
}

// maxFlowSessions bounds the sessions whose flows a process keeps; the
// least recently used is forgotten first (a session idle that long has
// most likely ended without saying so).
const maxFlowSessions = 4096

// flowOf is the session's flows (created when create).
func (g *Guard) flowOf(session string, create bool) *sessionFlow {
	g.flowsMu.Lock()
	defer g.flowsMu.Unlock()
	sf := g.flows[session]
	if sf == nil && create {
		if g.flows == nil {
			g.flows = map[string]*sessionFlow{}
		}
		if len(g.flows) >= maxFlowSessions {
			g.forgetOldestFlow()
		}
		sf = &sessionFlow{}
		if g.Board != nil {
			sf.Share(g.Board)
		}
		g.flows[session] = sf
	}
	if sf != nil {
		sf.used = g.now()
	}
	return sf
}

// forgetOldestFlow drops the least recently used session's flows;
// g.flowsMu.
func (g *Guard) forgetOldestFlow() {
	var oldest string
	var at time.Time
	for s, sf := range g.flows {
		if oldest == "" || sf.used.Before(at) {
			oldest, at = s, sf.used
		}
	}
	delete(g.flows, oldest)
}

// endFlows forgets an ended session's flows.
func (g *Guard) endFlows(session string) {
	g.flowsMu.Lock()
	delete(g.flows, session)
	g.flowsMu.Unlock()
}

// ForgetFlows clears what a session has read. It takes flowsMu alone,
// so that a commit's hook (which runs under g.mu) may call it.
func (g *Guard) ForgetFlows(session string) {
	if sf := g.flowOf(session, false); sf != nil {
		sf.Clear()
	}
}

// flowFor is what the evaluator is told of the session of a.
func (g *Guard) flowFor(a Action) evaluator.Flow {
	// With a board, a session that has read nothing yet still holds what
	// the client's other processes read.
	if sf := g.flowOf(a.Session, g.Board != nil); sf != nil {
		f := sf.Flow(a.Arguments)
		f.Remote = a.Remote
		return f
	}
	return evaluator.Flow{Remote: a.Remote}
}

// readResult reads what an allowed call handed back (flows.Observe):
// the result to hand on (nil: withheld) and the findings for the audit.
func (g *Guard) readResult(r Request, a Action, raw json.RawMessage) (json.RawMessage, []store.Finding) {
	if len(raw) == 0 {
		return raw, nil
	}
	pol := g.CurrentPolicy()
	read := flows.Read{Method: r.Method, Server: a.Server, Tool: a.Tool, Operation: a.Operation, Name: r.Name,
		Effects: a.Effects, PrivateSource: a.PrivateSource, UntrustedSource: a.UntrustedSource,
		Places: a.Places, Home: a.Home, Raw: raw, At: g.now()}
	if r.Scanner != nil {
		read.Scanner = r.Scanner(a.Server, pol.Flows.Budget())
	}
	out, found := g.flowOf(a.Session, true).Observe(read, pol)
	if len(found) == 0 {
		return out, nil
	}
	records := make([]store.Finding, len(found))
	for i, f := range found {
		records[i] = store.Finding{Kind: f.Kind, Rule: f.Rule, Where: f.Where, Digest: f.Digest, Count: f.Count}
	}
	if out == nil {
		g.log().Error("a result could not be written again; it is withheld", "server", g.pol().Title(a.Server), "tool", a.Tool)
	}
	return out, records
}
