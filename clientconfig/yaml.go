package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Continue keeps its servers in YAML: the mcpServers list of config.yaml.

func yamlEntries(data []byte) ([]Entry, error) {
	items, err := yamlItems(data)
	if err != nil {
		return nil, err
	}
	odd := oddLineBreaks(data)
	var out []Entry
	for _, it := range items {
		e := Entry{Name: it.name, Start: it.start, End: it.end}
		describeYAML(&e, it.node)
		if odd && e.Unsupported == "" {
			e.Unsupported = "the file breaks lines with a lone CR or a Unicode line separator; edit it by hand"
		}
		out = append(out, e)
	}
	return out, nil
}

// describeYAML reads one item of the mcpServers list (node nil: not a
// mapping): a local server's command, arguments and environment, or a
// remote one's url and headers.
func describeYAML(e *Entry, node *yaml.Node) {
	var m map[string]any
	switch {
	case node == nil:
		e.Unsupported = "not a mapping"
	case node.Decode(&m) != nil:
		e.Unsupported = "does not decode"
	case m["url"] != nil || m["type"] == "sse" || m["type"] == "streamable-http" || m["type"] == "websocket":
		describeContinueRemote(e, m, node)
	default:
		e.Env = stringMap(m["env"])
		c, _ := m["command"].(string)
		if c == "" {
			e.Unsupported = "no command"
			return
		}
		e.Command = c
		var ok bool
		if e.Args, ok = stringList(m["args"]); !ok {
			e.Unsupported = "args is not a list of strings"
		}
	}
}

// oddLineBreaks reports whether YAML text breaks a line other than with
// LF or CRLF (a lone CR, NEL, U+2028, U+2029): the editors count lines
// by LF.
func oddLineBreaks(data []byte) bool {
	for i, c := range data {
		if c == '\r' && (i+1 == len(data) || data[i+1] != '\n') {
			return true
		}
	}
	return bytes.Contains(data, []byte("\u0085")) || bytes.Contains(data, []byte("\u2028")) || bytes.Contains(data, []byte("\u2029"))
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
	if err := unmarshalYAMLNode(data, &doc); err != nil {
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
		it := yamlItem{start: dashLineStart(data, lines, n)}
		if n.Kind == yaml.MappingNode {
			it.node = n
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j].Value == "name" {
					it.name = n.Content[j+1].Value
				}
			}
		}
		if i+1 < len(seq.Content) {
			it.end = dashLineStart(data, lines, seq.Content[i+1])
		} else {
			// The last runs to its last line, and over the comment lines
			// below it indented as its keys.
			l := lastLine(n)
			for l+1 < len(lines) {
				line := string(data[lines[l+1]:lineEnd(data, lines, l+1)])
				t := strings.TrimLeft(line, " ")
				if !strings.HasPrefix(t, "#") || len(line)-len(t) < n.Column-1 {
					break
				}
				l++
			}
			it.end = lineEnd(data, lines, l)
		}
		out = append(out, it)
	}
	return out, nil
}

// unmarshalYAMLNode parses data into doc for editing by the positions
// its nodes carry. The parser counts a lone \r, NEL, LS and PS as line
// breaks, and the edits count lines by \n (\r\n is one break to both): a
// file holding the others is refused, loudly, rather than edited at the
// wrong offsets (FuzzWrapYAML found "mcpServers:\n-\r 000").
func unmarshalYAMLNode(data []byte, doc *yaml.Node) error {
	for i, c := range data {
		if c == '\r' && (i+1 == len(data) || data[i+1] != '\n') {
			return errors.New("a carriage return without a line feed; aqlguard edits YAML files whose lines end in \\n or \\r\\n: edit it by hand")
		}
	}
	for _, br := range []string{"\u0085", "\u2028", "\u2029"} {
		if bytes.Contains(data, []byte(br)) {
			return errors.New("a Unicode line or paragraph separator, which YAML counts as a line break; aqlguard edits YAML files whose lines end in \\n or \\r\\n: edit it by hand")
		}
	}
	if err := yaml.Unmarshal(data, doc); err != nil {
		return err
	}
	return nil
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

// dashLineStart is the start of an item's line, or of the line above
// that holds only its dash (comment lines between them are the item's).
func dashLineStart(data []byte, lines []int, n *yaml.Node) int {
	line := n.Line
	if before := strings.TrimSpace(string(data[lines[line] : lines[line]+n.Column-1])); strings.HasSuffix(before, "-") {
		return lines[line]
	}
	for l := line - 1; l >= 1; l-- {
		prev := strings.TrimSpace(string(data[lines[l]:lines[l+1]]))
		switch {
		case prev == "-" || strings.HasPrefix(prev, "- #") || strings.HasPrefix(prev, "-\t#"):
			return lines[l]
		case strings.HasPrefix(prev, "#"):
			continue
		}
		break
	}
	return lines[line]
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
	if err := unmarshalYAMLNode(text, &doc); err != nil {
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

// describeContinueRemote reads a remote server of Continue's: its url, its
// type (streamable-http, or none: Continue tries Streamable HTTP first),
// and its headers (requestOptions.headers, and apiKey, a bearer token).
func describeContinueRemote(e *Entry, m map[string]any, node *yaml.Node) {
	e.Remote = true
	switch m["type"] {
	case nil, "streamable-http":
	case "sse":
		e.Unsupported = "a remote server on the legacy HTTP+SSE transport; add it to aqlguard's config with transport = \"sse\""
		return
	default:
		e.Unsupported = fmt.Sprintf("type %v beside url", m["type"])
		return
	}
	u, ok := m["url"].(string)
	if !ok || u == "" {
		e.Unsupported = "a remote server without a url string"
		return
	}
	e.URL = u
	for _, k := range []string{"command", "args", "env", "cwd"} {
		if m[k] != nil {
			e.Unsupported = k + " beside url"
			return
		}
	}
	if node.Style&yaml.FlowStyle != 0 {
		e.Unsupported = "written as a flow mapping ({...}); write it as a block, one key a line"
		return
	}
	if yamlShared(node) {
		e.Unsupported = "it uses YAML anchors, aliases or merge keys; edit it by hand"
		return
	}
	h := headerSet{}
	if v, ok := m["apiKey"]; ok {
		s, ok := v.(string)
		if !ok {
			e.Unsupported = "apiKey is not a string"
			return
		}
		h.add("Authorization", "Bearer "+s)
	}
	if v, ok := m["requestOptions"]; ok {
		ro, ok := v.(map[string]any)
		if !ok {
			e.Unsupported = "requestOptions is not a mapping"
			return
		}
		for _, k := range sortedKeys(ro) {
			if k != "headers" {
				// TLS settings, proxies, timeouts: aqlguard's connection
				// would not honour them.
				e.Unsupported = "requestOptions." + k + ", which aqlguard's connection to the server does not take; guard this server in aqlguard's config"
				return
			}
		}
		hm, ok := ro["headers"].(map[string]any)
		if !ok && ro["headers"] != nil {
			e.Unsupported = "requestOptions.headers is not a mapping of strings"
			return
		}
		for _, k := range sortedKeys(hm) {
			s, ok := hm[k].(string)
			if !ok {
				e.Unsupported = "requestOptions.headers is not a mapping of strings"
				return
			}
			h.add(k, s)
		}
	}
	for k, v := range h.m {
		// Continue fills in ${{ secrets.X }} itself, in the environment
		// as in the headers; any other $ aqlguard would read as a
		// variable, where Continue sends it as written.
		if strings.Contains(continueTemplate.ReplaceAllString(v, ""), "$") {
			e.Unsupported = "the header " + k + " holds a $, which aqlguard would read as an environment variable"
			return
		}
	}
	if h.clash != "" {
		e.Unsupported = "the header " + h.clash + " is given twice"
		return
	}
	e.Headers = h.m
}

// continueTemplate is Continue's ${{ secrets.NAME }} (or inputs.NAME).
var continueTemplate = regexp.MustCompile(`\$\{\{[^}]*\}\}`)

// yamlShared reports whether n or anything in it is an anchor, an alias
// or a merge key: text that other entries share, or that stands
// elsewhere.
func yamlShared(n *yaml.Node) bool {
	if n.Anchor != "" || n.Kind == yaml.AliasNode || n.Tag == "!!merge" {
		return true
	}
	for _, c := range n.Content {
		if yamlShared(c) {
			return true
		}
	}
	return false
}

// continueRemoteMembers are the members of a remote Continue entry that
// leave it when it is wrapped.
var continueRemoteMembers = []string{"apiKey", "requestOptions"}

// wrapRemoteYAML turns a remote server's item into one that starts self
// wrap --url: type becomes stdio, the url line command: with args: (and
// env:, the headers) below it; apiKey and requestOptions go. Every other
// line and every comment stays.
func wrapRemoteYAML(text []byte, e Entry, self string, args []string) ([]byte, error) {
	item, err := yamlItem1(text)
	if err != nil {
		return nil, err
	}
	lines := lineOffsets(text)
	eol := lineEnding(text)
	var edits []textEdit
	done := false
	for i := 0; i+1 < len(item.Content); i += 2 {
		key, value := item.Content[i], item.Content[i+1]
		ks := lines[key.Line] + key.Column - 1
		switch {
		case key.Value == "type" && value.Kind == yaml.ScalarNode:
			vs, ve, err := scalarSpan(text, lines, value)
			if err != nil {
				return nil, err
			}
			edits = append(edits, textEdit{vs, ve, "stdio"})
		case key.Value == "url" && value.Kind == yaml.ScalarNode:
			_, ve, err := scalarSpan(text, lines, value)
			if err != nil {
				return nil, err
			}
			le := lineEnd(text, lines, value.Line)
			indent := strings.Repeat(" ", key.Column-1)
			var b strings.Builder
			b.WriteString("command: " + quote(self))
			b.WriteString(withEOL(string(text[ve:le]), eol)) // its comment stays
			b.WriteString(indent + "args: " + quoteList(args) + eol)
			if len(e.Headers) > 0 {
				h, err := json.Marshal(e.Headers)
				if err != nil {
					return nil, err
				}
				b.WriteString(indent + "env: {" + WrapHeadersEnv + ": " + singleQuoted(string(h)) + "}" + eol)
			}
			edits = append(edits, textEdit{ks, le, b.String()})
			done = true
		case slices.Contains(continueRemoteMembers, key.Value):
			start, end := lines[key.Line], yamlPairEnd(text, lines, item, i)
			prefix := ""
			if strings.TrimSpace(string(text[start:ks])) == "-" {
				// On the item's dash line: the dash stays, alone.
				start = ks
				for start > 0 && text[start-1] == ' ' {
					start--
				}
				prefix = eol
			}
			edits = append(edits, textEdit{start, end, prefix + yamlComments(text[start:end], key, value, strings.Repeat(" ", key.Column-1), eol)})
		}
	}
	if !done {
		return nil, errors.New("the entry has no url")
	}
	return applyEdits(text, edits), nil
}

// yamlItem1 parses a list item's text: a list of one mapping.
func yamlItem1(text []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := unmarshalYAMLNode(text, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.SequenceNode || len(doc.Content[0].Content) != 1 ||
		doc.Content[0].Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("the entry is not a list item")
	}
	return doc.Content[0].Content[0], nil
}

// scalarSpan is where a scalar on one line starts and ends: a plain one
// ends before its comment, a quoted one at its closing quote.
func scalarSpan(text []byte, lines []int, n *yaml.Node) (int, int, error) {
	start := lines[n.Line] + n.Column - 1
	body, _ := splitEOL(string(text[start:lineEnd(text, lines, n.Line)]))
	var end int
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		end = -1
		for i := 1; i < len(body); i++ {
			if body[i] == '\\' {
				i++
			} else if body[i] == '"' {
				end = i + 1
				break
			}
		}
	case n.Style&yaml.SingleQuotedStyle != 0:
		end = -1
		for i := 1; i < len(body); i++ {
			if body[i] == '\'' {
				if i+1 < len(body) && body[i+1] == '\'' {
					i++
					continue
				}
				end = i + 1
				break
			}
		}
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		end = -1
	default:
		end = len(body)
		if i := strings.Index(body, " #"); i >= 0 {
			end = i
		}
		end = len(strings.TrimRight(body[:end], " \t"))
	}
	if end < 0 {
		return 0, 0, errors.New("a value over several lines; edit the entry by hand")
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 && n.Value != body[:end] {
		// A plain scalar continued on the next line.
		return 0, 0, errors.New("a value over several lines; edit the entry by hand")
	}
	return start, start + end, nil
}

// yamlPairEnd is where the i-th key/value pair of item ends: at the next
// key's line, or, for the last, past the lines indented below its key.
func yamlPairEnd(text []byte, lines []int, item *yaml.Node, i int) int {
	if i+2 < len(item.Content) {
		return lines[item.Content[i+2].Line]
	}
	key := item.Content[i]
	end := lineEnd(text, lines, lastLine(item.Content[i+1]))
	for l := lastLine(item.Content[i+1]) + 1; l < len(lines); l++ {
		line := string(text[lines[l]:lineEnd(text, lines, l)])
		if strings.TrimSpace(line) == "" || len(line)-len(strings.TrimLeft(line, " ")) < key.Column {
			break
		}
		end = lineEnd(text, lines, l)
	}
	return end
}

// yamlComments are comment lines that keep the comments of a key/value
// pair that goes: the lines of text that are comments, and the comments
// on the pair's lines.
func yamlComments(text []byte, key, value *yaml.Node, indent, eol string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(string(text), "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "#") {
			b.WriteString(indent + t + eol)
		}
	}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.LineComment != "" {
			b.WriteString(indent + n.LineComment + eol)
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(key)
	walk(value)
	return b.String()
}

// singleQuoted is s as a YAML single-quoted scalar, where only ' is
// special: what Continue puts in for a ${{ secrets.X }} cannot end it
// unless it holds a quote.
func singleQuoted(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
