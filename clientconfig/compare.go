package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"
	"gopkg.in/yaml.v3"
)

// Clients rewrite their own config files (Claude Code rewrites
// ~/.claude.json whenever it saves a setting): indentation, key order and
// comments change while every entry means what it meant. So unwrap tells
// an edit from a reformatting by what the entry says, not by its bytes.

// entryValue is what an entry's text says: its JSON value, its TOML
// table or its YAML list item, decoded.
func entryValue(f File, name string, text []byte) (any, error) {
	switch f.Format {
	case JSON:
		std, err := hujson.Standardize(append([]byte(nil), text...))
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(std, &v); err != nil {
			return nil, err
		}
		return v, nil
	case TOML:
		var doc struct {
			MCPServers map[string]any `toml:"mcp_servers"`
		}
		if err := toml.Unmarshal(text, &doc); err != nil {
			return nil, err
		}
		v, ok := doc.MCPServers[name]
		if !ok {
			return nil, fmt.Errorf("no [mcp_servers.%s] table", name)
		}
		return v, nil
	case YAML:
		var list []any
		if err := yaml.Unmarshal(text, &list); err != nil {
			return nil, err
		}
		if len(list) != 1 {
			return nil, errors.New("not one list item")
		}
		return list[0], nil
	}
	return nil, fmt.Errorf("unknown format %q", f.Format)
}

// canonical renders a decoded value as indented JSON with sorted keys,
// so two values that mean the same render the same, and a diff of two
// renderings shows what one says that the other does not.
func canonical(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(jsonable(v)); err != nil {
		return fmt.Sprintf("%#v\n", v)
	}
	return b.String()
}

// jsonable turns YAML's map[any]any (a mapping with non-string keys)
// into something encoding/json takes.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonable(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = jsonable(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonable(e)
		}
		return out
	}
	return v
}

// wrappedFromRecord is the entry as init wrapped it, rebuilt from its
// record: the original, run by self. It is rebuilt rather than stored so
// that records written before this comparison existed are read the same.
func wrappedFromRecord(f File, e Entry, rec Record, self string) ([]byte, error) {
	orig := []byte(rec.Original)
	var o Entry
	switch f.Format {
	case JSON:
		o = Entry{Name: e.Name, Start: 0, End: len(orig)}
		describeJSON(&o, orig, f.Layout)
	case TOML:
		list, err := tomlEntries(orig)
		if err != nil || len(list) != 1 {
			return nil, fmt.Errorf("the recorded original does not parse: %v", err)
		}
		o = list[0]
	case YAML:
		item, err := yamlItem1(orig)
		if err != nil {
			return nil, fmt.Errorf("the recorded original does not parse: %w", err)
		}
		o = Entry{Name: e.Name, Start: 0, End: len(orig)}
		describeYAML(&o, item)
	default:
		return nil, fmt.Errorf("unknown format %q", f.Format)
	}
	if o.Unsupported != "" {
		return nil, errors.New("the recorded original is not an entry init wraps")
	}
	o.Name = e.Name
	if o.Remote {
		return WrapRemoteEntry(f, orig, o, self, rec.Client)
	}
	return WrapEntry(f, orig, o, self, rec.Client)
}

// change is what an entry says now that it did not say when init wrapped
// it: a unified diff of the two, as JSON ("" when they mean the same).
func change(f File, e Entry, current []byte, rec Record) (string, error) {
	if digest(current) == rec.WrappedSHA256 {
		return "", nil
	}
	// The command is whichever aqlguard the entry runs now (e.Command):
	// moving the binary is not an edit unwrap could lose.
	was, err := wrappedFromRecord(f, e, rec, e.Command)
	if err != nil {
		return "", err
	}
	wasV, err := entryValue(f, e.Name, was)
	if err != nil {
		return "", fmt.Errorf("the entry as wrapped does not parse: %w", err)
	}
	nowV, err := entryValue(f, e.Name, current)
	if err != nil {
		return "", fmt.Errorf("the entry does not parse: %w", err)
	}
	a, b := canonical(wasV), canonical(nowV)
	if a == b || reflect.DeepEqual(wasV, nowV) {
		return "", nil
	}
	return udiff.Unified("as aqlguard wrapped it", "as it is now", a, b), nil
}
