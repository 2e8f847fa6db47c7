package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
)

// Reserved are the operation names the spec reserves (8.5.4). Downstream
// tools can never take them, whatever their server and tool are called.
var Reserved = map[string]bool{
	"introspect": true, "execute_agent": true, "record_execution_step": true,
	"complete_execution": true, "abort_execution": true, "confirm_operation": true,
	"verify_challenge": true,
}

// Snake converts a tool or parameter name to snake_case: camelCase and
// PascalCase words are split, every other non-alphanumeric run becomes
// one underscore, and a name that would not start with a letter gets a
// "t" in front so the result always matches ^[a-z][a-z0-9_]*$.
func Snake(s string) string {
	rs := []rune(s)
	var b strings.Builder
	underscore := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
			b.WriteByte('_')
		}
	}
	for i, r := range rs {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if unicode.IsUpper(r) && i > 0 {
				prev := rs[i-1]
				nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
				if unicode.IsLower(prev) || unicode.IsDigit(prev) || unicode.IsUpper(prev) && nextLower {
					underscore()
				}
			}
			b.WriteRune(unicode.ToLower(r))
		default:
			underscore()
		}
	}
	out := strings.Trim(b.String(), "_")
	if out == "" || out[0] < 'a' || out[0] > 'z' {
		out = "t" + strings.TrimPrefix("_"+out, "_")
		if out == "t" {
			out = "tool"
		}
	}
	return out
}

// operationNames assigns every tool of one server its operation name,
// server + "_" + Snake(tool). Server names cannot contain "_", so names
// of different servers never collide; inside a server, a tool whose
// snake-cased name collides with another's (or with a reserved name) and
// is not already spelled that way gets a suffix derived from a hash of its
// own name. The result depends only on this server's tool names, so adding
// other servers never renames anything.
func operationNames(server string, tools []string) map[string]string {
	groups := map[string][]string{}
	for _, t := range tools {
		n := server + "_" + Snake(t)
		groups[n] = append(groups[n], t)
	}
	names := make(map[string]string, len(tools))
	taken := map[string]bool{}
	for n, members := range groups {
		if len(members) == 1 && !Reserved[n] {
			names[members[0]] = n
			taken[n] = true
			continue
		}
		for _, t := range members {
			if t == strings.TrimPrefix(n, server+"_") && !Reserved[n] {
				names[t] = n
				taken[n] = true
			}
		}
	}
	for n, members := range groups {
		for _, t := range members {
			if _, done := names[t]; done {
				continue
			}
			sum := sha256.Sum256([]byte(t))
			h := hex.EncodeToString(sum[:])
			for l := 6; ; l += 2 {
				cand := n + "_" + h[:l]
				if !taken[cand] && groups[cand] == nil {
					names[t] = cand
					taken[cand] = true
					break
				}
			}
		}
	}
	return names
}

// pascal renders an operation name as a type name prefix.
func pascal(s string) string {
	var b strings.Builder
	for _, w := range strings.Split(s, "_") {
		if w == "" {
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}
