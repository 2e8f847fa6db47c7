package catalog

import (
	"strings"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// How a category was decided, reported in introspection and the log.
const (
	ByConfig      = "config"
	ByAnnotations = "annotations"
	ByVerb        = "verb"
	ByOperation   = "operation"
	ByDefault     = "default"
)

// Classify assigns a tool exactly one semantic category. The config's
// override wins; then the tool's own annotations; then the verb its name
// starts with; anything else is EXECUTE, the category that assumes
// external effects (spec 8.3).
func Classify(t *mcp.Tool, override string) (policy.Category, string) {
	if override != "" {
		return policy.Category(strings.ToUpper(override)), ByConfig
	}
	verb, hasVerb := policy.Verbs[strings.SplitN(Snake(t.Name), "_", 2)[0]]
	if a := t.Annotations; a != nil {
		if a.ReadOnlyHint {
			return policy.Read, ByAnnotations
		}
		if a.DestructiveHint != nil && *a.DestructiveHint {
			// Destructive rules out READ and CREATE (spec 6.1); the verb
			// may still tell UPDATE from DELETE.
			switch verb {
			case policy.Update, policy.Delete, policy.Execute:
				return verb, ByAnnotations
			}
			return policy.Execute, ByAnnotations
		}
	}
	if hasVerb {
		return verb, ByVerb
	}
	return policy.Execute, ByDefault
}

// ClassifyHint classifies a reported step (record_execution_step) by its
// next_action_hint: the operation it names (an operation name or
// server.tool of this catalog), else the first verb it uses, else
// nothing, which the evaluator scores like EXECUTE. by says which
// (ByOperation, ByVerb, ByDefault). The hint is the model's own prose, so
// this only informs the cooperative loop; a call the step announces is
// judged again, on what it really does, when it is made.
func (c *Catalog) ClassifyHint(hint string) (op *Operation, cat policy.Category, by string) {
	words := strings.FieldsFunc(strings.ToLower(hint), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-')
	})
	for _, w := range words {
		w = strings.Trim(w, ".-")
		if o, ok := c.byName[w]; ok && !o.Builtin {
			return o, o.Category, ByOperation
		}
		if server, tool, ok := strings.Cut(w, "."); ok {
			for _, o := range c.ops {
				if o.Server == server && o.Tool != nil && strings.EqualFold(o.Tool.Name, tool) {
					return o, o.Category, ByOperation
				}
			}
		}
	}
	for _, w := range words {
		for _, stem := range stems(w) {
			if cat, ok := policy.Verbs[stem]; ok {
				return nil, cat, ByVerb
			}
			if cat, ok := policy.HintVerbs[stem]; ok {
				return nil, cat, ByVerb
			}
		}
	}
	return nil, "", ByDefault
}

// stems are the word and the verbs it may be a form of: "reading" ->
// read, "writing" -> write, "running" -> run, "lists" -> list,
// "deleted" -> delete. Crude on purpose: a wrong guess only changes the
// base risk of a reported step.
func stems(w string) []string {
	out := []string{w}
	for _, suffix := range []string{"ing", "ed", "es", "s"} {
		base, ok := strings.CutSuffix(w, suffix)
		if !ok || len(base) < 2 {
			continue
		}
		out = append(out, base, base+"e")
		if n := len(base); n >= 3 && base[n-1] == base[n-2] {
			out = append(out, base[:n-1])
		}
	}
	return out
}
