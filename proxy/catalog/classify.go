package catalog

import (
	"strings"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// verbs is the spec's verb table (operations.txt 6.2, spec 8.5.1), plus a
// few read verbs common in MCP servers (read, fetch, view, describe, show,
// query) that the table's spirit covers.
var verbs = map[string]policy.Category{
	"create": policy.Create, "add": policy.Create, "upload": policy.Create, "register": policy.Create,
	"import": policy.Create, "insert": policy.Create,
	"get": policy.Read, "list": policy.Read, "search": policy.Read, "find": policy.Read,
	"export": policy.Read, "count": policy.Read, "read": policy.Read, "fetch": policy.Read,
	"view": policy.Read, "describe": policy.Read, "show": policy.Read, "query": policy.Read,
	"update": policy.Update, "edit": policy.Update, "set": policy.Update, "rename": policy.Update,
	"move": policy.Update, "patch": policy.Update, "merge": policy.Update,
	"delete": policy.Delete, "remove": policy.Delete, "purge": policy.Delete, "unregister": policy.Delete,
	"clear": policy.Delete, "drop": policy.Delete,
	"execute": policy.Execute, "cancel": policy.Execute, "run": policy.Execute, "start": policy.Execute,
	"stop": policy.Execute, "resume": policy.Execute, "trigger": policy.Execute, "invoke": policy.Execute,
}

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
	verb, hasVerb := verbs[strings.SplitN(Snake(t.Name), "_", 2)[0]]
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

// hintVerbs add verbs people use to describe actions in prose, which tool
// names rarely start with.
var hintVerbs = map[string]policy.Category{
	"write": policy.Update, "modify": policy.Update, "change": policy.Update, "save": policy.Update,
	"replace": policy.Update, "append": policy.Update, "overwrite": policy.Update,
	"open": policy.Read, "inspect": policy.Read, "check": policy.Read, "look": policy.Read,
	"download": policy.Read, "browse": policy.Read, "grep": policy.Read, "cat": policy.Read,
	"make": policy.Create, "mkdir": policy.Create, "generate": policy.Create, "copy": policy.Create,
	"erase": policy.Delete, "wipe": policy.Delete, "destroy": policy.Delete, "truncate": policy.Delete,
	"rm": policy.Delete, "deploy": policy.Execute, "push": policy.Execute, "install": policy.Execute,
	"send": policy.Execute, "publish": policy.Execute, "kill": policy.Execute,
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
			if cat, ok := verbs[stem]; ok {
				return nil, cat, ByVerb
			}
			if cat, ok := hintVerbs[stem]; ok {
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
