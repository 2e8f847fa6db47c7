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
