package clientconfig

import (
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Continue keeps its servers in YAML: the mcpServers list of config.yaml.

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
