package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tailscale/hujson"
)

// WrapHeadersEnv is the variable `aqlguard wrap --url` reads a remote
// server's headers from (a JSON object): in the environment the client
// starts aqlguard with, where, unlike argv, other users cannot read them.
const WrapHeadersEnv = "AQLGUARD_WRAP_HEADERS"

// WrapRemoteArgs are the arguments of a wrapped remote entry: OAuth when
// the server asks for it, unless the entry sends its own Authorization.
func WrapRemoteArgs(name, agent, url string, headers map[string]string) []string {
	auth := "oauth"
	for k := range headers {
		if strings.EqualFold(k, "Authorization") {
			auth = "none"
		}
	}
	return []string{"wrap", "--name", name, "--agent", agent, "--url", url, "--auth", auth}
}

// WrapRemoteEntry returns the bytes that replace a remote entry's: a
// local aqlguard (self wrap --url) that connects to the URL. The headers
// go in the entry's environment (not its arguments, which every user of
// the machine can read).
func WrapRemoteEntry(f File, data []byte, e Entry, self, agent string) ([]byte, error) {
	args := WrapRemoteArgs(e.Name, agent, e.URL, e.Headers)
	switch f.Format {
	case JSON:
		return wrapRemoteJSON(data, e, self, args)
	case TOML:
		return wrapRemoteTOML(data[e.Start:e.End], e, self, args)
	case YAML:
		return wrapRemoteYAML(data[e.Start:e.End], e, self, args)
	}
	return nil, fmt.Errorf("unknown format %q", f.Format)
}

// jsonURLKeys are the members a JSON entry names its URL with, the one
// the client prefers first (Gemini CLI takes httpUrl over url).
var jsonURLKeys = []string{"httpUrl", "url", "serverUrl"}

// describeJSONRemote reads a remote entry of a JSON config.
func describeJSONRemote(e *Entry, m map[string]any, typ string) {
	e.Remote = true
	_, e.typed = m["type"]
	for _, k := range jsonURLKeys {
		if u, ok := m[k].(string); ok && u != "" {
			e.URL, e.urlKey = u, k
			break
		}
	}
	switch {
	case typ == "sse":
		e.Unsupported = "a remote server on the legacy HTTP+SSE transport; add it to aqlguard's config with transport = \"sse\""
		return
	case e.URL == "":
		e.Unsupported = "a remote server without a url string"
		return
	}
	for _, k := range []string{"command", "args", "env", "cwd"} {
		if m[k] != nil {
			e.Unsupported = k + " beside a url"
			return
		}
	}
	// The client's own ways of authorizing: a registered OAuth client, a
	// cloud provider's credentials. aqlguard's OAuth would not be them.
	for _, k := range []string{"oauth", "auth"} {
		if o, ok := m[k].(map[string]any); ok && !(len(o) == 1 && o["enabled"] != nil) || m[k] != nil && !ok {
			e.Unsupported = k + " configures the client's own authorization, which aqlguard's does not take; guard this server in aqlguard's config (auth = \"oauth\", oauth_client_id)"
			return
		}
	}
	if p, ok := m["authProviderType"]; ok && p != "dynamic_discovery" {
		e.Unsupported = fmt.Sprintf("authProviderType %v: the client's own credentials, which aqlguard does not have", p)
		return
	}
	if hm, ok := m["headers"].(map[string]any); ok {
		h := headerSet{}
		for _, k := range sortedKeys(hm) {
			v, ok := hm[k].(string)
			if !ok {
				e.Unsupported = "headers is not an object of strings"
				return
			}
			h.add(k, v)
		}
		if h.clash != "" {
			e.Unsupported = "the header " + h.clash + " is given twice"
			return
		}
		e.Headers = h.m
	} else if m["headers"] != nil {
		e.Unsupported = "headers is not an object of strings"
	}
}

// wrapRemoteJSON turns a remote entry into one that starts self wrap
// --url: its URL member becomes "command" with "args" (and "env", the
// headers) after it, the other URL members and "headers" go, "type"
// becomes "stdio"; every other member ("disabled", "timeout", ...) and
// the comments between them stay.
func wrapRemoteJSON(data []byte, e Entry, self string, args []string) ([]byte, error) {
	v, err := hujson.Parse(append([]byte(nil), data[e.Start:e.End]...))
	if err != nil {
		return nil, err
	}
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return nil, errors.New("the entry is not an object")
	}
	// The other URL members and the headers go; their comments stay,
	// before the member that follows (or the closing brace).
	var kept []hujson.ObjectMember
	var carry []string
	for i, m := range obj.Members {
		name := memberName(m)
		if name == e.urlKey || !slices.Contains(jsonURLKeys, name) && name != "headers" {
			if len(carry) > 0 {
				m.Name.BeforeExtra = withComments(m.Name.BeforeExtra, carry)
				carry = nil
			}
			kept = append(kept, m)
			continue
		}
		carry = append(carry, jsonComments(m.Name.BeforeExtra)...)
		carry = append(carry, jsonComments(m.Value.AfterExtra)...)
		if i == len(obj.Members)-1 && len(kept) > 0 {
			// The new last member takes over whether a comma follows.
			last := &kept[len(kept)-1]
			carry = append(carry, jsonComments(last.Value.AfterExtra)...)
			last.Value.AfterExtra = m.Value.AfterExtra
		}
	}
	if len(carry) > 0 {
		obj.AfterExtra = withComments(obj.AfterExtra, carry)
	}
	obj.Members = kept
	if e.typed {
		patch, err := json.Marshal([]map[string]string{{"op": "replace", "path": "/type", "value": "stdio"}})
		if err != nil {
			return nil, err
		}
		if err := v.Patch(patch); err != nil {
			return nil, fmt.Errorf("editing the entry: %w", err)
		}
	}
	text := v.Pack()
	// Offsets are the parser's: read the edited entry again.
	if v, err = hujson.Parse(append([]byte(nil), text...)); err != nil {
		return nil, err
	}
	var url *hujson.ObjectMember
	for i, m := range v.Value.(*hujson.Object).Members {
		if memberName(m) == e.urlKey {
			url = &v.Value.(*hujson.Object).Members[i]
		}
	}
	if url == nil {
		return nil, errors.New("the entry has no " + e.urlKey)
	}
	// The new members follow the URL's, on lines of their own when the
	// entry has one member a line.
	sep := ", "
	if nl := bytes.LastIndexByte(text[:url.Name.StartOffset], '\n'); nl >= 0 {
		sep = "," + lineEnding(text) + indentOf(text[nl+1:url.Name.StartOffset])
	}
	more := sep + `"args": ` + jsonText(args)
	if len(e.Headers) > 0 {
		h, err := json.Marshal(e.Headers)
		if err != nil {
			return nil, err
		}
		more += sep + `"env": ` + jsonText(map[string]string{WrapHeadersEnv: string(h)})
	}
	return applyEdits(text, []textEdit{
		{url.Name.StartOffset, url.Name.EndOffset, `"command"`},
		{url.Value.StartOffset, url.Value.EndOffset, quote(self) + more},
	}), nil
}

// jsonComments are the comments in the white space between JSON tokens.
func jsonComments(extra hujson.Extra) []string {
	var out []string
	for b := []byte(extra); len(b) > 0; {
		switch {
		case bytes.HasPrefix(b, []byte("//")):
			end := bytes.IndexByte(b, '\n')
			if end < 0 {
				end = len(b)
			}
			out = append(out, strings.TrimRight(string(b[:end]), "\r"))
			b = b[end:]
		case bytes.HasPrefix(b, []byte("/*")):
			end := bytes.Index(b[2:], []byte("*/"))
			if end < 0 {
				return append(out, string(b))
			}
			out = append(out, string(b[:end+4]))
			b = b[end+4:]
		default:
			b = b[1:]
		}
	}
	return out
}

// withComments is the white space before a member or a closing brace,
// with comments that stood elsewhere put first, each on a line of its
// own (a // comment ends its line).
func withComments(extra hujson.Extra, comments []string) hujson.Extra {
	nl := bytes.LastIndexByte(extra, '\n')
	indent := ""
	if nl >= 0 {
		indent = indentOf(extra[nl+1:])
	}
	var b strings.Builder
	for _, c := range comments {
		b.WriteString("\n" + indent + c)
	}
	rest := string(extra)
	if !strings.HasPrefix(strings.TrimLeft(rest, " \t"), "\n") && !strings.HasPrefix(strings.TrimLeft(rest, " \t"), "\r\n") {
		rest = "\n" + indent + strings.TrimLeft(rest, " \t")
	}
	return hujson.Extra(b.String() + rest)
}

func memberName(m hujson.ObjectMember) string {
	var name string
	if lit, ok := m.Name.Value.(hujson.Literal); ok {
		_ = json.Unmarshal(bytes.TrimSpace(lit), &name)
	}
	return name
}

// headerSet gathers a remote entry's headers from the members that give
// them; a header given twice (in any case) is a clash, whose winner is
// the client's business.
type headerSet struct {
	m     map[string]string
	clash string
}

func (h *headerSet) add(name, value string) {
	if h.m == nil {
		h.m = map[string]string{}
	}
	for k := range h.m {
		if strings.EqualFold(k, name) {
			h.clash = name
		}
	}
	h.m[name] = value
}

// isEnvName reports whether s is a variable name ${s} can stand for.
func isEnvName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
