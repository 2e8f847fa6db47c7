package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/pelletier/go-toml/v2/unstable"
)

// AddToSandbox returns the configuration data with value added to the
// list key ("read", "write" or "connect") of the [servers.sandbox] of
// the server named server: in its list when it has one, as a new key of
// its [servers.sandbox] table when it has the table, else in a new table
// at the end of the server's entry. Everything else of the file is kept
// as it is, comments too. A server whose sandbox is written inline
// (sandbox = { ... }) or with dotted keys is not edited: the error says
// the line to add. The result is parsed and checked before it is
// returned.
func AddToSandbox(data []byte, server, key string, value any) ([]byte, error) {
	var lit string
	switch v := value.(type) {
	case string:
		b, _ := json.Marshal(v) // a JSON string is a TOML basic string
		lit = string(b)
	case int:
		lit = strconv.Itoa(v)
	default:
		return nil, fmt.Errorf("a sandbox value is a path or a port, not %T", value)
	}
	line := key + " = [" + lit + "]"
	byHand := func(why string) error {
		return fmt.Errorf("%s; add %s to the [servers.sandbox] of the server %s by hand", why, line, server)
	}
	type kv struct {
		key        string
		start, end int // the whole expression
	}
	var (
		p          = &unstable.Parser{KeepComments: true}
		table      []string
		element    = -1 // the [[servers]] element being read
		found      = -1 // the element named server
		names      = map[int]string{}
		elemStart  = map[int]int{}
		elemEnd    = map[int]int{}
		sbHeader   = map[int]int{} // end of the [servers.sandbox] header line
		sbKeys     = map[int][]kv{}
		inlineSB   = map[int]bool{}
		headerLine = func(n *unstable.Node) int { return lineStartOf(data, int(n.Raw.Offset)) }
	)
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keysOfIt(e.Key())
			it := e.Key()
			it.Next()
			start := headerLine(it.Node())
			isServers := e.Kind == unstable.ArrayTable && slices.Equal(table, []string{"servers"})
			within := len(table) > 1 && table[0] == "servers" && e.Kind == unstable.Table
			if element >= 0 && !within {
				if _, done := elemEnd[element]; !done {
					elemEnd[element] = start
				}
			}
			if isServers {
				element++
				elemStart[element] = start
			}
			if within && element >= 0 && slices.Equal(table, []string{"servers", "sandbox"}) {
				var last *unstable.Node
				for k := e.Key(); k.Next(); {
					last = k.Node()
				}
				sbHeader[element] = lineEndOf(data, int(last.Raw.Offset+last.Raw.Length))
			}
		case unstable.KeyValue:
			keys := keysOfIt(e.Key())
			switch {
			case element < 0:
			case slices.Equal(table, []string{"servers"}) && len(keys) == 1 && keys[0] == "name":
				if v := e.Value(); v.Kind == unstable.String {
					names[element] = string(v.Data)
				}
			case slices.Equal(table, []string{"servers"}) && keys[0] == "sandbox":
				inlineSB[element] = true
			case slices.Equal(table, []string{"servers", "sandbox"}) && len(keys) == 1:
				sbKeys[element] = append(sbKeys[element], kv{keys[0], int(e.Raw.Offset), int(e.Raw.Offset + e.Raw.Length)})
			}
		}
	}
	if err := p.Error(); err != nil {
		return nil, fmt.Errorf("the configuration is not valid TOML: %w", err)
	}
	for i, n := range names {
		if n == server {
			found = i
		}
	}
	if found < 0 {
		return nil, fmt.Errorf("no [[servers]] entry is named %q", server)
	}
	if inlineSB[found] {
		return nil, byHand("its sandbox is written inline (sandbox = { ... } or sandbox.KEY = ...), which aqlguard does not rewrite")
	}
	end, ok := elemEnd[found]
	if !ok {
		end = len(data)
	}
	var out []byte
	switch h, has := sbHeader[found]; {
	case has:
		i := slices.IndexFunc(sbKeys[found], func(k kv) bool { return k.key == key })
		if i < 0 {
			out = splice(data, h, h, []byte(line+"\n"))
			break
		}
		k := sbKeys[found][i]
		end := bytes.LastIndexByte(data[k.start:k.end], ']')
		if end < 0 {
			return nil, byHand(key + " is not a list")
		}
		end += k.start
		start := bytes.IndexByte(data[k.start:end], '[') + k.start
		sep := ", "
		if len(bytes.TrimSpace(data[start+1:end])) == 0 {
			sep = ""
		}
		out = splice(data, end, end, []byte(sep+lit))
	default:
		// After the entry's last line that is not blank.
		for end > 0 {
			prev := lineStartOf(data, end-1)
			if len(bytes.TrimSpace(data[prev:end])) > 0 {
				break
			}
			end = prev
		}
		var add bytes.Buffer
		if end > 0 && data[end-1] != '\n' {
			add.WriteByte('\n')
		}
		add.WriteString("\n[servers.sandbox]\n" + line + "\n")
		out = splice(data, end, end, add.Bytes())
	}
	cfg, err := Parse(out, "the edited configuration")
	if err != nil {
		return nil, byHand("the edit does not leave a valid configuration (" + err.Error() + ")")
	}
	for _, s := range cfg.Servers {
		if s.Name != server {
			continue
		}
		ok := false
		switch v := value.(type) {
		case string:
			ok = slices.Contains(map[string][]string{"read": s.Sandbox.Read, "write": s.Sandbox.Write}[key], v)
		case int:
			ok = key == "connect" && slices.Contains(s.Sandbox.Connect, v)
		}
		if !ok {
			return nil, byHand("the edit did not land where it should")
		}
	}
	return out, nil
}

func splice(data []byte, from, to int, with []byte) []byte {
	out := make([]byte, 0, len(data)+len(with))
	out = append(out, data[:from]...)
	out = append(out, with...)
	return append(out, data[to:]...)
}

func keysOfIt(it unstable.Iterator) []string {
	var keys []string
	for it.Next() {
		keys = append(keys, string(it.Node().Data))
	}
	return keys
}

func lineStartOf(data []byte, off int) int {
	return bytes.LastIndexByte(data[:off], '\n') + 1
}

// lineEndOf is the offset past the newline that ends the line off is on.
func lineEndOf(data []byte, off int) int {
	if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(data)
}
