package policy

import (
	"strings"

	"github.com/aqlguard/aqlguard/config"
)

// The naming vocabulary: the words that, leading a tool's own name, say
// what it does. The catalog classifies tools by Verbs, a reported step's
// hint by HintVerbs too, and the risk stage scores names by the
// danger-level conventions; name patterns whose literal head is one of
// these words are read as being about the tool's own name (see
// Pattern.FirstName), and `policy check` reports a server named like one.

// Verbs is the spec's verb table (operations.txt 6.2, spec 8.5.1), plus a
// few read verbs common in MCP servers (read, fetch, view, describe,
// show, query) that the table's spirit covers.
var Verbs = map[string]Category{
	"create": Create, "add": Create, "upload": Create, "register": Create,
	"import": Create, "insert": Create,
	"get": Read, "list": Read, "search": Read, "find": Read,
	"export": Read, "count": Read, "read": Read, "fetch": Read,
	"view": Read, "describe": Read, "show": Read, "query": Read,
	"update": Update, "edit": Update, "set": Update, "rename": Update,
	"move": Update, "patch": Update, "merge": Update,
	"delete": Delete, "remove": Delete, "purge": Delete, "unregister": Delete,
	"clear": Delete, "drop": Delete,
	"execute": Execute, "cancel": Execute, "run": Execute, "start": Execute,
	"stop": Execute, "resume": Execute, "trigger": Execute, "invoke": Execute,
}

// HintVerbs add verbs people use to describe actions in prose, which tool
// names rarely start with (but some do: write_file, deploy_app).
var HintVerbs = map[string]Category{
	"write": Update, "modify": Update, "change": Update, "save": Update,
	"replace": Update, "append": Update, "overwrite": Update,
	"open": Read, "inspect": Read, "check": Read, "look": Read,
	"download": Read, "browse": Read, "grep": Read, "cat": Read,
	"make": Create, "mkdir": Create, "generate": Create, "copy": Create,
	"erase": Delete, "wipe": Delete, "destroy": Delete, "truncate": Delete,
	"rm": Delete, "deploy": Execute, "push": Execute, "install": Execute,
	"send": Execute, "publish": Execute, "kill": Execute,
}

// The danger-level naming conventions (danger-levels.md 6.1-6.3), each a
// literal prefix or suffix of a tool's own name in snake_case.
var (
	SafeNames      = []string{"get_*", "list_*", "search_*", "count_*", "check_*", "introspect*"}
	DangerousNames = []string{"force_*", "*_permanently", "bulk_delete*", "override_*", "bypass_*", "*_without_backup", "purge_*"}
	ForbiddenNames = []string{"drop_*", "delete_all*", "truncate_*", "reset_*", "destroy_*", "wipe_*", "*_production"}
)

// conventionWords are the words that lead a name under the vocabulary:
// every verb, and the first word of every prefix convention.
var conventionWords = func() map[string]bool {
	out := map[string]bool{}
	for w := range Verbs {
		out[w] = true
	}
	for w := range HintVerbs {
		out[w] = true
	}
	for _, list := range [][]string{SafeNames, DangerousNames, ForbiddenNames} {
		for _, p := range list {
			if strings.HasPrefix(p, "*") {
				continue
			}
			head := strings.TrimSuffix(p, "*")
			head, _, _ = strings.Cut(head, "_")
			out[head] = true
		}
	}
	return out
}()

// ConventionWord reports whether w (lower case) is a word the naming
// vocabulary gives a meaning when it leads a tool's own name: "get",
// "search", "delete", "drop", "deploy", ...
func ConventionWord(w string) bool { return conventionWords[w] }

// serverNames are the names of the configured servers.
func serverNames(c *config.Config) map[string]bool {
	out := make(map[string]bool, len(c.Servers))
	for _, s := range c.Servers {
		out[s.Name] = true
	}
	return out
}
