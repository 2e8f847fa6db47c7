package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	"github.com/tailscale/hujson"
	"gopkg.in/yaml.v3"
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
	// what it names (JSON configs), for a wrap that connects to it.
	Remote  bool
	URL     string
	Headers map[string]string
	typed   bool // the entry has a "type" member (VS Code's, Claude Code's)
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

// WrapRemoteEntry returns the bytes that replace a remote entry's: a
// local aqlguard (self wrap --url) that connects to the URL, authorized
// by OAuth when the server asks unless the entry sends its own
// Authorization header. The headers go in the entry's environment (not
// its arguments, which every user of the machine can read).
func WrapRemoteEntry(f File, data []byte, e Entry, self, agent string) ([]byte, error) {
	if f.Format != JSON {
		return nil, errors.New("a remote entry in this format is not wrapped yet; add it to aqlguard's config by hand")
	}
	auth := "oauth"
	for k := range e.Headers {
		if strings.EqualFold(k, "Authorization") {
			auth = "none"
		}
	}
	entry := map[string]any{}
	if e.typed {
		entry["type"] = "stdio"
	}
	entry["command"] = self
	entry["args"] = []string{"wrap", "--name", e.Name, "--agent", agent, "--url", e.URL, "--auth", auth}
	if len(e.Headers) > 0 {
		h, err := json.Marshal(e.Headers)
		if err != nil {
			return nil, err
		}
		entry["env"] = map[string]string{"AQLGUARD_WRAP_HEADERS": string(h)}
	}
	// Indented as the line the entry starts on is.
	lineStart := bytes.LastIndexByte(data[:e.Start], '\n') + 1
	indent := data[lineStart:e.Start]
	indent = indent[:len(indent)-len(bytes.TrimLeft(indent, " \t"))]
	return json.MarshalIndent(entry, string(indent), "  ")
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
		if seen[out[i].Key()] > 1 {
			out[i].Unsupported = "the name appears more than once in this list; edit it by hand"
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
		e.Remote = true
		_, e.typed = m["type"]
		for _, k := range []string{"url", "httpUrl", "serverUrl"} {
			if u, ok := m[k].(string); ok && u != "" {
				e.URL = u
				break
			}
		}
		e.Headers = stringMap(m["headers"])
		switch {
		case typ == "sse":
			e.Unsupported = "a remote server on the legacy HTTP+SSE transport; add it to aqlguard's config with transport = \"sse\""
		case e.URL == "":
			e.Unsupported = "a remote server without a url string"
		}
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

// --- TOML (Codex) ---------------------------------------------------------

// tomlSection is one [mcp_servers.NAME] table.
type tomlSection struct {
	name       string
	start, end int
}

func tomlEntries(data []byte) ([]Entry, error) {
	sections, err := tomlSections(data)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, s := range sections {
		e := Entry{Name: s.name, Start: s.start, End: s.end}
		var doc struct {
			MCPServers map[string]map[string]any `toml:"mcp_servers"`
		}
		if err := toml.Unmarshal(data[s.start:s.end], &doc); err != nil {
			e.Unsupported = "the table does not parse on its own: " + err.Error()
			out = append(out, e)
			continue
		}
		m := doc.MCPServers[s.name]
		e.Env = stringMap(m["env"])
		if m["url"] != nil {
			e.Remote = true
		} else if c, ok := m["command"].(string); ok && c != "" {
			e.Command = c
			if e.Args, ok = stringList(m["args"]); !ok {
				e.Unsupported = "args is not a list of strings"
			}
		} else {
			e.Unsupported = "no command"
		}
		out = append(out, e)
	}
	return out, nil
}

// tomlSections finds the [mcp_servers.NAME] tables: each runs from the
// start of its header line to the start of the next header line.
func tomlSections(data []byte) ([]tomlSection, error) {
	p := &unstable.Parser{KeepComments: true}
	p.Reset(data)
	type header struct {
		keys  []string
		start int
	}
	var headers []header
	for p.NextExpression() {
		e := p.Expression()
		if e.Kind != unstable.Table && e.Kind != unstable.ArrayTable {
			continue
		}
		var h header
		it := e.Key()
		first := true
		for it.Next() {
			n := it.Node()
			if first {
				h.start = lineStart(data, int(n.Raw.Offset))
				first = false
			}
			h.keys = append(h.keys, string(n.Data))
		}
		headers = append(headers, h)
	}
	if err := p.Error(); err != nil {
		return nil, fmt.Errorf("invalid TOML: %w", err)
	}
	var out []tomlSection
	for i, h := range headers {
		if len(h.keys) != 2 || h.keys[0] != "mcp_servers" {
			continue
		}
		end := len(data)
		if i+1 < len(headers) {
			end = headers[i+1].start
		}
		out = append(out, tomlSection{name: h.keys[1], start: h.start, end: end})
	}
	return out, nil
}

func lineStart(data []byte, off int) int {
	for off > 0 && data[off-1] != '\n' {
		off--
	}
	return off
}

func wrapTOML(text []byte, self string, args []string) ([]byte, error) {
	p := &unstable.Parser{KeepComments: true}
	p.Reset(text)
	var cmdValue, cmdKV, argsKV *unstable.Range
	for p.NextExpression() {
		e := p.Expression()
		if e.Kind != unstable.KeyValue {
			continue
		}
		it := e.Key()
		var keys []string
		for it.Next() {
			keys = append(keys, string(it.Node().Data))
		}
		if len(keys) != 1 {
			continue
		}
		raw := e.Raw
		switch keys[0] {
		case "command":
			v := e.Value().Raw
			cmdValue, cmdKV = &v, &raw
		case "args":
			argsKV = &raw
		}
	}
	if err := p.Error(); err != nil {
		return nil, err
	}
	if cmdValue == nil {
		return nil, errors.New("the table has no command = line")
	}
	edits := []textEdit{{int(cmdValue.Offset), int(cmdValue.Offset + cmdValue.Length), quote(self)}}
	argsText := "args = " + quoteList(args)
	if argsKV != nil {
		edits = append(edits, textEdit{int(argsKV.Offset), int(argsKV.Offset + argsKV.Length), argsText})
	} else {
		end := int(cmdKV.Offset + cmdKV.Length)
		nl := bytes.IndexByte(text[end:], '\n')
		at := len(text)
		if nl >= 0 {
			at = end + nl + 1
		}
		edits = append(edits, textEdit{at, at, argsText + lineEnding(text)})
	}
	return applyEdits(text, edits), nil
}

// --- YAML (Continue) -------------------------------------------------------

func yamlEntries(data []byte) ([]Entry, error) {
	items, err := yamlItems(data)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, it := range items {
		e := Entry{Name: it.name, Start: it.start, End: it.end}
		var m map[string]any
		switch {
		case it.node == nil:
			e.Unsupported = "not a mapping"
		case it.node.Decode(&m) != nil:
			e.Unsupported = "does not decode"
		case m["url"] != nil || m["type"] == "sse" || m["type"] == "streamable-http":
			e.Remote = true
		default:
			e.Env = stringMap(m["env"])
			c, _ := m["command"].(string)
			if c == "" {
				e.Unsupported = "no command"
				break
			}
			e.Command = c
			var ok bool
			if e.Args, ok = stringList(m["args"]); !ok {
				e.Unsupported = "args is not a list of strings"
			}
		}
		out = append(out, e)
	}
	return out, nil
}

type yamlItem struct {
	name       string
	start, end int
	node       *yaml.Node
}

// yamlItems finds the entries of the top-level mcpServers list: each runs
// from the start of its first line to the start of the next entry's, and
// the last to the end of its last line.
func yamlItems(data []byte) ([]yamlItem, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil
	}
	top := doc.Content[0]
	var seq *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "mcpServers" {
			seq = top.Content[i+1]
		}
	}
	if seq == nil {
		return nil, nil
	}
	if seq.Kind != yaml.SequenceNode || seq.Style&yaml.FlowStyle != 0 {
		return nil, errors.New("mcpServers is not a block list; edit it by hand")
	}
	lines := lineOffsets(data)
	var out []yamlItem
	for i, n := range seq.Content {
		it := yamlItem{start: dashLineStart(data, lines, n.Line)}
		if n.Kind == yaml.MappingNode {
			it.node = n
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j].Value == "name" {
					it.name = n.Content[j+1].Value
				}
			}
		}
		if i+1 < len(seq.Content) {
			it.end = dashLineStart(data, lines, seq.Content[i+1].Line)
		} else {
			it.end = lineEnd(data, lines, lastLine(n))
		}
		out = append(out, it)
	}
	return out, nil
}

// lineOffsets maps 1-based line numbers to byte offsets.
func lineOffsets(data []byte) []int {
	out := []int{0, 0}
	for i, c := range data {
		if c == '\n' {
			out = append(out, i+1)
		}
	}
	return out
}

// dashLineStart is the start of an item's line, or of the line before
// when that line holds only its dash.
func dashLineStart(data []byte, lines []int, line int) int {
	start := lines[line]
	if line > 1 {
		prev := strings.TrimSpace(string(data[lines[line-1]:lines[line]]))
		if prev == "-" {
			return lines[line-1]
		}
	}
	return start
}

func lineEnd(data []byte, lines []int, line int) int {
	if line+1 < len(lines) {
		return lines[line+1]
	}
	return len(data)
}

func lastLine(n *yaml.Node) int {
	l := n.Line
	for _, c := range n.Content {
		l = max(l, lastLine(c))
	}
	return l
}

func wrapYAML(text []byte, self string, args []string) ([]byte, error) {
	var doc yaml.Node
	// The item's text is a one-element list: parse it to find its keys.
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.SequenceNode || len(doc.Content[0].Content) != 1 {
		return nil, errors.New("the entry is not a list item")
	}
	item := doc.Content[0].Content[0]
	lines := lineOffsets(text)
	type kv struct{ key, value *yaml.Node }
	find := func(name string) *kv {
		for i := 0; i+1 < len(item.Content); i += 2 {
			if item.Content[i].Value == name {
				return &kv{item.Content[i], item.Content[i+1]}
			}
		}
		return nil
	}
	cmd := find("command")
	if cmd == nil || cmd.value.Kind != yaml.ScalarNode {
		return nil, errors.New("the entry has no command")
	}
	// The command's value runs to the end of its line; a trailing
	// comment after an unquoted value is kept.
	cs := lines[cmd.value.Line] + cmd.value.Column - 1
	ce := lineEnd(text, lines, cmd.value.Line)
	body, nl := splitEOL(string(text[cs:ce]))
	keep := ""
	if i := strings.Index(body, " #"); i >= 0 && cmd.value.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 {
		keep = body[i:]
	}
	edits := []textEdit{{cs, ce, quote(self) + keep + nl}}
	if a := find("args"); a != nil {
		as := lines[a.value.Line] + a.value.Column - 1
		text2 := quoteList(args)
		if a.value.Line > a.key.Line {
			// A block list on the lines below: replace it from the key.
			as = lines[a.key.Line] + a.key.Column - 1
			text2 = "args: " + text2
		}
		ae := lineEnd(text, lines, lastLine(a.value))
		_, anl := splitEOL(string(text[as:ae]))
		edits = append(edits, textEdit{as, ae, text2 + anl})
	} else {
		indent := strings.Repeat(" ", cmd.key.Column-1)
		if nl == "" {
			nl = lineEnding(text)
		}
		edits = append(edits, textEdit{ce, ce, indent + "args: " + quoteList(args) + nl})
	}
	return applyEdits(text, edits), nil
}

// splitEOL splits a line from its line ending.
func splitEOL(line string) (body, eol string) {
	switch {
	case strings.HasSuffix(line, "\r\n"):
		return line[:len(line)-2], "\r\n"
	case strings.HasSuffix(line, "\n"):
		return line[:len(line)-1], "\n"
	}
	return line, ""
}

// --- shared ------------------------------------------------------------------

// quote renders s as a JSON string, which TOML and YAML read as their own
// double-quoted strings.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
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
	sort.Slice(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
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
