package guard

import (
	"encoding/json"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/flows"
	"github.com/aqlguard/aqlguard/store"
)

// Each session of the principal has its flows (flows.Sessions): what it
// has read that counts for where data may go. The guard tells the
// evaluator of them before a call and has them read what an allowed
// call returns.

// sessions are the flows of the principal's sessions, made on first use
// with the Board set then.
func (g *Guard) sessions() *flows.Sessions {
	g.flowsOnce.Do(func() { g.flows = &flows.Sessions{Board: g.Board, Now: g.now} })
	return g.flows
}

// ForgetFlows clears what a session has read (a commit's hook may call
// it: flows.Sessions' lock is a leaf).
func (g *Guard) ForgetFlows(session string) { g.sessions().Forget(session) }

// flowFor is what the evaluator is told of the session of a.
func (g *Guard) flowFor(a Action) evaluator.Flow {
	return g.sessions().Flow(a.Session, a.Arguments, a.Remote)
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
	out, found := g.sessions().Of(a.Session, true).Observe(read, pol)
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
