package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Codex keeps its servers in TOML: [mcp_servers.NAME] tables, each with
// its sub-tables ([mcp_servers.NAME.env], [mcp_servers.NAME.http_headers]).

// tomlSection is one [mcp_servers.NAME] table and the sub-tables that
// follow it.
type tomlSection struct {
	name       string
	start, end int
	// apart: a sub-table of this server stands elsewhere in the file.
	apart bool
}

// tomlInline is a server written in the [mcp_servers] table itself or
// as a dotted key (mcp_servers.NAME.command = ...): aqlguard does not
// edit those, but says so.
type tomlInline struct {
	name       string
	start, end int
}

func tomlEntries(data []byte) ([]Entry, error) {
	sections, inline, err := tomlSections(data)
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
		describeCodex(&e, doc.MCPServers[s.name])
		if s.apart && e.Remote && e.Unsupported == "" {
			e.Unsupported = "a sub-table of this server stands apart from its [mcp_servers." + s.name + "] table; move it under the table, or edit the entry by hand"
		}
		out = append(out, e)
	}
	if len(inline) > 0 {
		var doc struct {
			MCPServers map[string]map[string]any `toml:"mcp_servers"`
		}
		_ = toml.Unmarshal(data, &doc) // what it cannot read stays empty
		for _, s := range inline {
			e := Entry{Name: s.name, Start: s.start, End: s.end}
			describeCodex(&e, doc.MCPServers[s.name])
			e.Unsupported = "written inline, not as an [mcp_servers." + s.name + "] table; make it a table (or edit it by hand)"
			out = append(out, e)
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	}
	return out, nil
}

// describeCodex reads one server's table.
func describeCodex(e *Entry, m map[string]any) {
	e.Env = stringMap(m["env"])
	if m["url"] != nil {
		describeCodexRemote(e, m)
		return
	}
	c, ok := m["command"].(string)
	if !ok || c == "" {
		e.Unsupported = "no command"
		return
	}
	e.Command = c
	if e.Args, ok = stringList(m["args"]); !ok {
		e.Unsupported = "args is not a list of strings"
	}
}

// codexRemoteMembers are the members of a remote Codex entry that carry
// its headers: they leave the entry when it is wrapped (Codex refuses
// them on a server it starts).
var codexRemoteMembers = []string{"url", "bearer_token_env_var", "http_headers", "env_http_headers"}

// describeCodexRemote reads a remote server ([mcp_servers.NAME] with url):
// its headers, and the environment variables they name, which Codex
// passes to a server it starts only when env_vars lists them.
func describeCodexRemote(e *Entry, m map[string]any) {
	e.Remote = true
	u, ok := m["url"].(string)
	if !ok || u == "" {
		e.Unsupported = "url is not a string"
		return
	}
	e.URL = u
	for _, k := range []string{"command", "args", "env", "env_vars", "cwd"} {
		if m[k] != nil {
			e.Unsupported = k + " beside url (Codex itself refuses the table)"
			return
		}
	}
	if m["bearer_token"] != nil {
		e.Unsupported = "bearer_token (Codex itself refuses it; bearer_token_env_var names the variable that holds the token)"
		return
	}
	for _, k := range []string{"oauth", "oauth_resource", "scopes"} {
		if m[k] != nil {
			e.Unsupported = k + " configures Codex's own OAuth login, which aqlguard's authorization does not take; guard this server in aqlguard's config (auth = \"oauth\", oauth_client_id)"
			return
		}
	}
	h := headerSet{}
	if v, ok := m["bearer_token_env_var"]; ok {
		name, ok := v.(string)
		if !ok || !isEnvName(name) {
			e.Unsupported = "bearer_token_env_var is not an environment variable's name"
			return
		}
		h.add("Authorization", "Bearer ${"+name+"}")
		e.EnvVars = append(e.EnvVars, name)
	}
	if v, ok := m["http_headers"]; ok {
		hm, ok := v.(map[string]any)
		if !ok {
			e.Unsupported = "http_headers is not a table of strings"
			return
		}
		for _, k := range sortedKeys(hm) {
			s, ok := hm[k].(string)
			switch {
			case !ok:
				e.Unsupported = "http_headers is not a table of strings"
				return
			case strings.Contains(s, "$"):
				// aqlguard reads ${NAME} in a header as a variable; Codex
				// sends this one as written.
				e.Unsupported = "the header " + k + " holds a $, which aqlguard would read as an environment variable"
				return
			}
			h.add(k, s)
		}
	}
	if v, ok := m["env_http_headers"]; ok {
		hm, ok := v.(map[string]any)
		if !ok {
			e.Unsupported = "env_http_headers is not a table of strings"
			return
		}
		for _, k := range sortedKeys(hm) {
			name, ok := hm[k].(string)
			if !ok || !isEnvName(name) {
				e.Unsupported = "env_http_headers." + k + " is not an environment variable's name"
				return
			}
			h.add(k, "${"+name+"}")
			e.EnvVars = append(e.EnvVars, name)
		}
	}
	if h.clash != "" {
		e.Unsupported = "the header " + h.clash + " is given twice"
		return
	}
	e.Headers = h.m
	slices.Sort(e.EnvVars)
	e.EnvVars = slices.Compact(e.EnvVars)
}

// tomlSections finds the [mcp_servers.NAME] tables: each runs from the
// start of its header line to the start of the next header line that is
// not one of its sub-tables. Servers written otherwise are listed apart.
func tomlSections(data []byte) ([]tomlSection, []tomlInline, error) {
	p := &unstable.Parser{KeepComments: true}
	p.Reset(data)
	type header struct {
		keys  []string
		start int
	}
	var headers []header
	var inline []tomlInline
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			h := header{keys: keysOf(e.Key())}
			first := e.Key()
			first.Next()
			h.start = lineStart(data, int(first.Node().Raw.Offset))
			headers = append(headers, h)
			table = h.keys
		case unstable.KeyValue:
			// A server defined outside its own table: mcp_servers.NAME.x = ...
			// at the top, or NAME = {...} / NAME.x = ... in [mcp_servers].
			full := append(slices.Clone(table), keysOf(e.Key())...)
			if len(table) < 2 && len(full) >= 2 && full[0] == "mcp_servers" {
				start := lineStart(data, int(e.Raw.Offset))
				inline = append(inline, tomlInline{full[1], start, lineEndAfter(data, int(e.Raw.Offset+e.Raw.Length))})
			}
			if len(table) < 2 && len(full) == 1 && full[0] == "mcp_servers" {
				// mcp_servers = { NAME = {...}, ... }
				start := lineStart(data, int(e.Raw.Offset))
				for _, name := range inlineTableKeys(e.Value()) {
					inline = append(inline, tomlInline{name, start, lineEndAfter(data, int(e.Raw.Offset+e.Raw.Length))})
				}
			}
		}
	}
	if err := p.Error(); err != nil {
		return nil, nil, fmt.Errorf("invalid TOML: %w", err)
	}
	var out []tomlSection
	at := map[string]int{} // server name -> its section in out
	for i := 0; i < len(headers); i++ {
		h := headers[i]
		if len(h.keys) < 2 || h.keys[0] != "mcp_servers" {
			continue
		}
		if len(h.keys) > 2 {
			// A sub-table not right after its server's table.
			if j, ok := at[h.keys[1]]; ok {
				out[j].apart = true
			}
			continue
		}
		s := tomlSection{name: h.keys[1], start: h.start, end: len(data)}
		for i+1 < len(headers) && len(headers[i+1].keys) > 2 && headers[i+1].keys[0] == "mcp_servers" && headers[i+1].keys[1] == s.name {
			i++
		}
		if i+1 < len(headers) {
			s.end = headers[i+1].start
		}
		at[s.name] = len(out)
		out = append(out, s)
	}
	// One entry per inline server, at its first line.
	seen := map[string]bool{}
	inline = slices.DeleteFunc(inline, func(s tomlInline) bool {
		if seen[s.name] {
			return true
		}
		seen[s.name] = true
		return false
	})
	return out, inline, nil
}

func keysOf(it unstable.Iterator) []string {
	var keys []string
	for it.Next() {
		keys = append(keys, string(it.Node().Data))
	}
	return keys
}

// inlineTableKeys are the first keys of an inline table's members.
func inlineTableKeys(n *unstable.Node) []string {
	if n.Kind != unstable.InlineTable {
		return nil
	}
	var out []string
	for c := n.Child(); c != nil; c = c.Next() {
		if c.Kind == unstable.KeyValue {
			if keys := keysOf(c.Key()); len(keys) > 0 {
				out = append(out, keys[0])
			}
		}
	}
	return out
}

func lineStart(data []byte, off int) int {
	for off > 0 && data[off-1] != '\n' {
		off--
	}
	return off
}

// lineEndAfter is the offset just past the end of the line off is on
// (its newline included), or the end of data.
func lineEndAfter(data []byte, off int) int {
	if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(data)
}

// tomlLine is one line (or several, for a value that spans them) of a
// server's table: a key = value in the table itself, or the header or a
// key = value of one of its sub-tables. Comment lines are not listed:
// no edit touches them.
type tomlLine struct {
	// member is the server's member the line is part of: the first key
	// in the table itself (http_headers for http_headers.X = ...), the
	// sub-table's name below it.
	member string
	dotted bool // a key = value in the table with a dotted key
	// start and end are the whole lines, end past the last newline.
	start, end int
	// kv and value are the key = value text and its value's (in the
	// table itself only).
	kv, value unstable.Range
	// inner are the comments inside the value (a list or an inline
	// table over several lines), trailing the one after it or after the
	// header.
	inner, trailing []string
}

// tomlLines lists the lines of one server's table text.
func tomlLines(text []byte) ([]tomlLine, error) {
	p := &unstable.Parser{KeepComments: true}
	p.Reset(text)
	var table []string
	var out []tomlLine
	for p.NextExpression() {
		x := p.Expression()
		switch x.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keysOf(x.Key())
			if len(table) > 2 {
				it := x.Key()
				var first, last *unstable.Node
				for it.Next() {
					if first == nil {
						first = it.Node()
					}
					last = it.Node()
				}
				l := tomlLine{member: table[2], start: lineStart(text, int(first.Raw.Offset)),
					end: lineEndAfter(text, int(last.Raw.Offset+last.Raw.Length))}
				l.trailing = nodeComments(x.Next())
				out = append(out, l)
			}
		case unstable.KeyValue:
			keys := keysOf(x.Key())
			l := tomlLine{start: lineStart(text, int(x.Raw.Offset)), end: lineEndAfter(text, int(x.Raw.Offset+x.Raw.Length))}
			switch {
			case len(table) == 2:
				l.member, l.dotted = keys[0], len(keys) > 1
				l.kv, l.value = x.Raw, x.Value().Raw
			case len(table) > 2:
				l.member = table[2]
			default:
				continue
			}
			l.inner, l.trailing = nodeComments(x.Value()), nodeComments(x.Next())
			out = append(out, l)
		}
	}
	return out, p.Error()
}

// nodeComments are the comments in n and below it (inside an array or
// an inline table that spans lines), or n itself when it is one.
func nodeComments(n *unstable.Node) []string {
	type at struct {
		off  int
		text string
	}
	var found []at
	var walk func(n *unstable.Node, siblings bool)
	walk = func(n *unstable.Node, siblings bool) {
		for ; n != nil; n = n.Next() {
			if n.Kind == unstable.Comment {
				found = append(found, at{int(n.Raw.Offset), string(n.Data)})
			}
			walk(n.Child(), true)
			if !siblings {
				return
			}
		}
	}
	walk(n, false)
	sort.SliceStable(found, func(i, j int) bool { return found[i].off < found[j].off })
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = strings.TrimRight(f.text, "\r\n")
	}
	return out
}

// kept are comment lines that keep the comments of a line that goes or
// is rewritten, indented as the line was.
func kept(text []byte, l tomlLine, comments []string, eol string) string {
	var b strings.Builder
	for _, c := range comments {
		b.WriteString(indentOf(text[l.start:l.end]))
		b.WriteString(c)
		b.WriteString(eol)
	}
	return b.String()
}

// indentOf is the white space a line starts with.
func indentOf(line []byte) string {
	return string(line[:len(line)-len(bytes.TrimLeft(line, " \t"))])
}

func wrapTOML(text []byte, self string, args []string) ([]byte, error) {
	lines, err := tomlLines(text)
	if err != nil {
		return nil, err
	}
	var cmd, argsLine, envVars *tomlLine
	for i := range lines {
		l := &lines[i]
		switch {
		case l.dotted || l.kv.Length == 0:
		case l.member == "command":
			cmd = l
		case l.member == "args":
			argsLine = l
		case l.member == "env_vars":
			envVars = l
		}
	}
	if cmd == nil {
		return nil, errors.New("the table has no command = line")
	}
	eol := lineEnding(text)
	edits := []textEdit{{int(cmd.value.Offset), int(cmd.value.Offset + cmd.value.Length), quote(self)}}
	var after strings.Builder // lines that follow the command's
	argsText := "args = " + quoteList(args)
	if argsLine != nil {
		edits = append(edits, replaceKV(text, *argsLine, argsText, eol))
	} else {
		after.WriteString(indentOf(text[cmd.start:cmd.end]) + argsText + eol)
	}
	switch have, ok := tomlStrings(text, envVars); {
	case envVars == nil:
		after.WriteString(indentOf(text[cmd.start:cmd.end]) + "env_vars = " + quoteList(codexPassEnv) + eol)
	case ok:
		edits = append(edits, replaceKV(text, *envVars, "env_vars = "+quoteList(union(have, codexPassEnv)), eol))
	}
	if after.Len() > 0 {
		at, prefix := cmd.end, ""
		if at == len(text) && !bytes.HasSuffix(text, []byte("\n")) {
			prefix = eol
		}
		edits = append(edits, textEdit{at, at, prefix + after.String()})
	}
	return applyEdits(text, edits), nil
}

// codexPassEnv are the variables aqlguard itself needs that Codex does
// not pass to a server it starts unless env_vars lists them: the display
// and session bus a dialog and the keyring use, the browser for OAuth
// consent, and where aqlguard's own config and state are (aqlguard at
// the shell and aqlguard under Codex must be the same guard).
var codexPassEnv = []string{"BROWSER", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY",
	"XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME"}

// replaceKV replaces a key = value with kv: the comment after it stays
// on its line; those inside a value over several lines stay, below it.
func replaceKV(text []byte, l tomlLine, kv, eol string) textEdit {
	end := int(l.kv.Offset + l.kv.Length)
	return textEdit{int(l.kv.Offset), l.end, kv + withEOL(string(text[end:l.end]), eol) + kept(text, l, l.inner, eol)}
}

// tomlStrings reads a key = [list of strings] line.
func tomlStrings(text []byte, l *tomlLine) ([]string, bool) {
	if l == nil {
		return nil, false
	}
	var v map[string]any
	if toml.Unmarshal(text[l.kv.Offset:l.kv.Offset+l.kv.Length], &v) != nil {
		return nil, false
	}
	return stringList(v[l.member])
}

// union is a's items, then b's not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// wrapRemoteTOML turns a remote server's table into one that starts
// self wrap --url: the url line becomes command = and the lines after
// it args =, env = (the headers) and env_vars = (the variables the
// headers name, which Codex passes only when listed, and aqlguard's
// own); the header members go. Every other line and every comment
// stays.
func wrapRemoteTOML(text []byte, e Entry, self string, args []string) ([]byte, error) {
	lines, err := tomlLines(text)
	if err != nil {
		return nil, err
	}
	eol := lineEnding(text)
	var edits []textEdit
	done := false
	for _, l := range lines {
		if !slices.Contains(codexRemoteMembers, l.member) {
			continue
		}
		if l.member != "url" || l.dotted || l.kv.Length == 0 || done {
			edits = append(edits, textEdit{l.start, l.end, kept(text, l, append(l.inner, l.trailing...), eol)})
			continue
		}
		done = true
		indent := indentOf(text[l.start:l.end])
		end := int(l.kv.Offset + l.kv.Length)
		var b strings.Builder
		b.WriteString("command = " + quote(self))
		b.WriteString(withEOL(string(text[end:l.end]), eol)) // its comment stays
		b.WriteString(indent + "args = " + quoteList(args) + eol)
		if len(e.Headers) > 0 {
			h, err := json.Marshal(e.Headers)
			if err != nil {
				return nil, err
			}
			b.WriteString(indent + "env = { " + WrapHeadersEnv + " = " + quote(string(h)) + " }" + eol)
		}
		b.WriteString(indent + "env_vars = " + quoteList(union(e.EnvVars, codexPassEnv)) + eol)
		edits = append(edits, textEdit{int(l.kv.Offset), l.end, b.String()})
	}
	if !done {
		return nil, errors.New("the table has no url = line")
	}
	return applyEdits(text, edits), nil
}

// withEOL is s ending in eol when it does not end in a newline.
func withEOL(s, eol string) string {
	if strings.HasSuffix(s, "\n") {
		return s
	}
	return s + eol
}
