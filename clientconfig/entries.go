package clientconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tailscale/hujson"
)

// Entry is one server entry of a config file.
type Entry struct {
	Name string
	// Section says where the entry is when a file has several server
	// lists (Claude Code's local scope: "project /path").
	Section string
	// Start and End delimit the entry's bytes in the file.
	Start, End int
	Command    string
	Args       []string
	// Env is the environment the client starts the server with.
	Env map[string]string
	// Remote: the entry names a URL, not a process. URL and Headers are
	// what it names, for a wrap that connects to it; a header's ${NAME}
	// is the environment variable NAME.
	Remote  bool
	URL     string
	Headers map[string]string
	// EnvVars are the variables the headers name that the client passes
	// to a server it starts only when the entry lists them (Codex's
	// env_vars).
	EnvVars []string
	typed   bool   // the entry has a "type" member (VS Code's, Claude Code's)
	urlKey  string // the member that names the URL (url, httpUrl, serverUrl)
	// Unsupported says why an entry cannot be wrapped (an extension, an
	// odd shape), "" when it can.
	Unsupported string

	zedNested bool // Zed's {"command": {"path", "args"}}
}

// Key identifies the entry in the wrap records.
func (e Entry) Key() string {
	if e.Section == "" {
		return e.Name
	}
	return e.Section + "\x00" + e.Name
}

// Label names the entry for people.
func (e Entry) Label() string {
	if e.Section == "" {
		return e.Name
	}
	return e.Name + " (" + e.Section + ")"
}

// Wrapped reports whether the entry already runs aqlguard wrap: a binary
// named aqlguard, or self (the running binary, "" if unknown) whatever
// it is called, so that init run from a renamed binary does not wrap its
// own entries a second time.
func (e Entry) Wrapped(self string) bool {
	if len(e.Args) == 0 || e.Args[0] != "wrap" {
		return false
	}
	base := strings.TrimSuffix(strings.ToLower(filepath.Base(e.Command)), ".exe")
	return base == "aqlguard" || self != "" && SamePath(e.Command, self)
}

// SamePath reports whether paths a and b name the same file.
func SamePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// Wrappee is the command and arguments a wrapped entry runs behind the
// guard (what follows "--"), or nil.
func (e Entry) Wrappee() []string {
	for i, a := range e.Args {
		if a == "--" {
			return e.Args[i+1:]
		}
	}
	return nil
}

// WrapArgs are the arguments of a wrapped entry.
func WrapArgs(name, agent, command string, args []string) []string {
	out := []string{"wrap", "--name", name, "--agent", agent, "--", command}
	return append(out, args...)
}

// Entries lists a file's server entries.
func Entries(f File, data []byte) ([]Entry, error) {
	var out []Entry
	var err error
	switch f.Format {
	case JSON:
		out, err = jsonEntries(f, data)
	case TOML:
		out, err = tomlEntries(data)
	case YAML:
		out, err = yamlEntries(data)
	default:
		return nil, fmt.Errorf("unknown format %q", f.Format)
	}
	// A name given twice in one list: the client uses one of them, and
	// which is its business; neither is safe to edit.
	seen := map[string]int{}
	for _, e := range out {
		seen[e.Key()]++
	}
	for i := range out {
		switch {
		case seen[out[i].Key()] > 1:
			out[i].Unsupported = "the name appears more than once in this list; edit it by hand"
		case out[i].Remote && out[i].Name == "" && out[i].Unsupported == "":
			out[i].Unsupported = "a remote server without a name"
		}
	}
	return out, err
}

// WrapEntry returns the bytes that replace e's: the same entry running
// self wrap --name N --agent agent -- <its command and args>.
func WrapEntry(f File, data []byte, e Entry, self, agent string) ([]byte, error) {
	args := WrapArgs(e.Name, agent, e.Command, e.Args)
	text := data[e.Start:e.End]
	switch f.Format {
	case JSON:
		return wrapJSON(text, e, self, args)
	case TOML:
		return wrapTOML(text, self, args)
	case YAML:
		return wrapYAML(text, self, args)
	}
	return nil, fmt.Errorf("unknown format %q", f.Format)
}

// --- JSON and JSONC -------------------------------------------------------

func jsonEntries(f File, data []byte) ([]Entry, error) {
	root, err := hujson.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	key := string(f.Layout)
	var out []Entry
	add := func(section string, obj *hujson.Object) error {
		for i := range obj.Members {
			m := &obj.Members[i]
			var name string
			if err := json.Unmarshal(bytes.TrimSpace(m.Name.Value.(hujson.Literal)), &name); err != nil {
				return fmt.Errorf("%s: a server name: %w", f.Path, err)
			}
			e := Entry{Name: name, Section: section, Start: m.Value.StartOffset, End: m.Value.EndOffset}
			describeJSON(&e, data[e.Start:e.End], f.Layout)
			out = append(out, e)
		}
		return nil
	}
	top, ok := root.Value.(*hujson.Object)
	if !ok {
		return nil, fmt.Errorf("%s: not a JSON object", f.Path)
	}
	if obj := member(top, key); obj != nil {
		if err := add("", obj); err != nil {
			return nil, err
		}
	}
	if f.Layout == MCPServers && filepath.Base(f.Path) == ".claude.json" {
		// Claude Code's local scope: servers of one project, per user.
		if projects := member(top, "projects"); projects != nil {
			for i := range projects.Members {
				var dir string
				if json.Unmarshal(bytes.TrimSpace(projects.Members[i].Name.Value.(hujson.Literal)), &dir) != nil {
					continue
				}
				if p, ok := projects.Members[i].Value.Value.(*hujson.Object); ok {
					if obj := member(p, key); obj != nil {
						if err := add("project "+dir, obj); err != nil {
							return nil, err
						}
					}
				}
			}
		}
	}
	return out, nil
}

// member returns the object value of key in obj, or nil.
func member(obj *hujson.Object, key string) *hujson.Object {
	for i := range obj.Members {
		var name string
		if lit, ok := obj.Members[i].Name.Value.(hujson.Literal); ok && json.Unmarshal(bytes.TrimSpace(lit), &name) == nil && name == key {
			o, _ := obj.Members[i].Value.Value.(*hujson.Object)
			return o
		}
	}
	return nil
}

func describeJSON(e *Entry, text []byte, layout Layout) {
	std, err := hujson.Standardize(append([]byte(nil), text...))
	if err != nil {
		e.Unsupported = "the entry does not parse"
		return
	}
	var m map[string]any
	if err := json.Unmarshal(std, &m); err != nil {
		e.Unsupported = "the entry is not an object"
		return
	}
	typ, _ := m["type"].(string)
	if m["url"] != nil || m["httpUrl"] != nil || m["serverUrl"] != nil || typ == "http" || typ == "sse" || typ == "streamable-http" {
		describeJSONRemote(e, m, typ)
		return
	}
	e.Env = stringMap(m["env"])
	switch c := m["command"].(type) {
	case string:
		e.Command = c
		e.Args, _ = stringList(m["args"])
	case map[string]any:
		if layout != ZedServers {
			e.Unsupported = "command is an object"
			return
		}
		e.zedNested = true
		e.Env = stringMap(c["env"])
		e.Command, _ = c["path"].(string)
		e.Args, _ = stringList(c["args"])
	default:
		if layout == ZedServers && m["source"] == "extension" {
			e.Unsupported = "a Zed extension server (no command to wrap)"
			return
		}
		e.Unsupported = "no command"
		return
	}
	if e.Command == "" {
		e.Unsupported = "an empty command"
	}
	if _, ok := stringList(m["args"]); !ok && !e.zedNested {
		e.Unsupported = "args is not a list of strings"
	}
}

func stringMap(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		if s, ok := x.(string); ok {
			out[k] = s
		}
	}
	return out
}

func stringList(v any) ([]string, bool) {
	if v == nil {
		return nil, true
	}
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func wrapJSON(text []byte, e Entry, self string, args []string) ([]byte, error) {
	v, err := hujson.Parse(append([]byte(nil), text...))
	if err != nil {
		return nil, err
	}
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	ops := []op{{"replace", "/command", self}, {"add", "/args", args}}
	if e.zedNested {
		ops = []op{{"replace", "/command/path", self}, {"add", "/command/args", args}}
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	if err := v.Patch(patch); err != nil {
		return nil, fmt.Errorf("editing the entry: %w", err)
	}
	return v.Pack(), nil
}

// --- shared ------------------------------------------------------------------

// quote renders s as a JSON string, which TOML and YAML read as their own
// double-quoted strings.
func quote(s string) string { return jsonText(s) }

// jsonText is v as compact JSON, & < > as they are (a URL's query stays
// readable).
func jsonText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // strings, lists and maps of strings always encode
	return strings.TrimSuffix(b.String(), "\n")
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// lineEnding is the file's line ending: CRLF if its first line ends so.
func lineEnding(text []byte) string {
	if i := bytes.IndexByte(text, '\n'); i > 0 && text[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// textEdit replaces text[start:end] with text.
type textEdit struct {
	start, end int
	text       string
}

// applyEdits applies non-overlapping edits.
func applyEdits(text []byte, edits []textEdit) []byte {
	// An insertion (start == end) goes before a replacement that starts there.
	sort.SliceStable(edits, func(i, j int) bool {
		return edits[i].start < edits[j].start || edits[i].start == edits[j].start && edits[i].end < edits[j].end
	})
	var b bytes.Buffer
	at := 0
	for _, x := range edits {
		b.Write(text[at:x.start])
		b.WriteString(x.text)
		at = x.end
	}
	b.Write(text[at:])
	return b.Bytes()
}

// Replace returns data with data[start:end] replaced by with.
func Replace(data []byte, start, end int, with []byte) []byte {
	out := make([]byte, 0, len(data)-(end-start)+len(with))
	out = append(out, data[:start]...)
	out = append(out, with...)
	return append(out, data[end:]...)
}
