package clientconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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

func wrapRemoteJSON(data []byte, e Entry, self string, args []string) ([]byte, error) {
	entry := map[string]any{}
	if e.typed {
		entry["type"] = "stdio"
	}
	entry["command"] = self
	entry["args"] = args
	if len(e.Headers) > 0 {
		h, err := json.Marshal(e.Headers)
		if err != nil {
			return nil, err
		}
		entry["env"] = map[string]string{WrapHeadersEnv: string(h)}
	}
	// Indented as the line the entry starts on is.
	lineStart := bytes.LastIndexByte(data[:e.Start], '\n') + 1
	indent := data[lineStart:e.Start]
	indent = indent[:len(indent)-len(bytes.TrimLeft(indent, " \t"))]
	return json.MarshalIndent(entry, string(indent), "  ")
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
