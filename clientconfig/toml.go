package clientconfig

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Codex keeps its servers in TOML: [mcp_servers.NAME] tables.

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
