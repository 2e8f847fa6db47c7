package evaluator

import (
	"strconv"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/policy/canonical"
)

// Read is how a resources/read of uri from server is judged: a READ step
// named resource:<uri> (and server.resource:<uri>) by the URI's canonical
// form, so that every spelling of one resource meets the same patterns,
// with the URI as its argument "uri" and, when it was sent otherwise, as
// "uri_as_sent" too (text patterns see both). A URI with no canonical
// form is judged as sent and asks a human (Step.Unresolved).
func Read(server, uri string) Step {
	s := Step{Server: server, Category: policy.Read}
	canon, ok := canonical.URI(uri)
	switch {
	case !ok:
		canon = uri
		s.Unresolved = "the resource URI " + strconv.Quote(uri) + " does not name one resource that patterns can be matched against"
		s.Arguments = map[string]any{"uri": uri}
	case canon != uri:
		s.Arguments = map[string]any{"uri": canon, "uri_as_sent": uri}
	default:
		s.Arguments = map[string]any{"uri": canon}
	}
	s.Tool = policy.ResourcePrefix + canon
	s.Operation = server + "." + s.Tool
	return s
}

// Prompt is how a prompts/get of name from server is judged: a READ step
// named prompt:<name>, its arguments as arguments.
func Prompt(server, name string, args map[string]any) Step {
	if args == nil {
		args = map[string]any{}
	}
	tool := policy.PromptPrefix + name
	return Step{Server: server, Tool: tool, Operation: server + "." + tool, Category: policy.Read, Arguments: args}
}
