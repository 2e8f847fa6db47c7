package evaluator

import (
	"net/url"
	"strconv"
	"strings"

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
	if s.Unresolved == "" {
		s.Unresolved = resourceQuestion(uri)
	}
	s.Tool = policy.ResourcePrefix + canon
	s.Operation = server + "." + s.Tool
	return s
}

// resourceQuestion says why a resource URI needs a human before it is
// read ("" when it does not): a path in it that climbs with ".." (a
// server that joins it to a directory of its own reads outside it), or
// words that say it holds secrets, but for a file: URI, which is judged
// as the place it names (evaluator/places.go).
func resourceQuestion(uri string) string {
	decoded := uri
	if d, err := url.PathUnescape(uri); err == nil {
		decoded = d
	}
	if _, rest, ok := strings.Cut(decoded, ":"); ok {
		for _, seg := range strings.FieldsFunc(rest, func(r rune) bool { return r == '/' || r == '\\' || r == '?' || r == '#' }) {
			if seg == ".." {
				return "the resource URI " + strconv.Quote(uri) + " climbs with \"..\": a server that joins it to a directory reads outside it"
			}
		}
	}
	if len(uri) >= 5 && strings.EqualFold(uri[:5], "file:") {
		// A file is judged as the place it names (its path against the
		// sensitive places), not by the words of its name.
		return ""
	}
	words := strings.FieldsFunc(strings.ToLower(decoded), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	for i, w := range words {
		pair := ""
		if i+1 < len(words) {
			pair = w + " " + words[i+1]
		}
		said := ""
		switch {
		case secretPairs[pair]:
			said = pair
		case secretWords[w]:
			said = w
		}
		if said != "" {
			return "the resource URI " + strconv.Quote(uri) + " says it holds secrets (" + strconv.Quote(said) + ")"
		}
	}
	return ""
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

// secretWords and secretPairs are what, in a resource URI, say it holds
// secrets ("token" alone is also what a language model counts).
var (
	secretWords = map[string]bool{"credential": true, "credentials": true, "password": true, "passwords": true, "passwd": true,
		"secret": true, "secrets": true, "apikey": true, "apikeys": true, "privatekey": true}
	secretPairs = map[string]bool{"api key": true, "api keys": true, "private key": true, "access key": true, "access token": true,
		"auth token": true, "api token": true, "ssh key": true}
)
