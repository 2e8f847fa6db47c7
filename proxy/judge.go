package proxy

import (
	"encoding/json"
	"fmt"

	"github.com/aqlguard/aqlguard/effects"
	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/pins"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// JudgeTool is the guard's own judgement of one definition of a server's
// tool (pins.Judge): the category the catalog routes it by, the base
// risk of what it does (its effects, package effects) and the risk the
// evaluator scores a call of it at, with no arguments, under the policy
// in force. Tool pinning accepts a change without a human only if it
// does not lower this.
func (sh *Shared) JudgeTool(server string, definition json.RawMessage) (pins.Judgement, error) {
	var t mcp.Tool
	if err := json.Unmarshal(definition, &t); err != nil {
		return pins.Judgement{}, fmt.Errorf("judging %s's tool: %w", server, err)
	}
	var override string
	var declared map[string]string
	trusted := false
	for _, s := range sh.CurrentConfig().Servers {
		if s.Name == server {
			override, declared, trusted = s.Categories[t.Name], s.Effects, s.TrustFirstSight
		}
	}
	cat, _ := catalog.Classify(&t, override)
	// Judged as if a human had reviewed it, so that a hint which would
	// then lower what the guard believes (readOnlyHint added) is a change
	// that lowers the judgement, and waits for the human: a narrowing
	// keeps a pin's review.
	model := effects.Resolve(catalog.Definition(&t), effects.Config{Effects: declared, Reviewed: true})
	pol := sh.Guard.CurrentPolicy()
	risk, _ := evaluator.Risk(pol, evaluator.Step{Principal: pol.Principal, Operation: server + "_" + catalog.Snake(t.Name),
		Server: server, Tool: t.Name, Category: cat, Annotations: toolAnnotations(t.Annotations),
		Effects: model.Effects, EffectSource: model.Source, EffectWhy: model.Why, Roles: model.Roles, Modeled: true,
		Confined: model.Confined})
	j := pins.Judgement{Category: string(cat), Base: evaluator.EffectsRisk(model.Effects, model.Confined), Risk: risk,
		Says: model.Why, Concerns: model.Claims}
	switch {
	case model.Profile != "":
		j.Sight = pins.SightProfile
	case trusted:
		j.Sight = pins.SightTrusted
	}
	return j, nil
}

// toolAnnotations are a tool's MCP annotations as the evaluator reads them.
func toolAnnotations(a *mcp.ToolAnnotations) evaluator.Annotations {
	if a == nil {
		return evaluator.Annotations{}
	}
	out := evaluator.Annotations{Destructive: a.DestructiveHint, OpenWorld: a.OpenWorldHint}
	// The SDK decodes these as plain bools, so only true is a statement.
	if a.ReadOnlyHint {
		t := true
		out.ReadOnly = &t
	}
	if a.IdempotentHint {
		t := true
		out.Idempotent = &t
	}
	return out
}
