package names

import (
	"fmt"
	"strings"
)

// WellKnown are the names of well-known MCP servers a squatter would
// pass for: the reference servers and the official servers of the
// services agents use most, as configured server names
// (policy.ServerNameFrom: "sequential-thinking" is sequentialthinking).
var WellKnown = []string{
	"filesystem", "memory", "everything", "fetch", "git", "github", "gitlab", "sqlite", "postgres", "puppeteer",
	"playwright", "time", "sequentialthinking", "slack", "notion", "bravesearch", "googlemaps", "gdrive", "sentry",
	"redis", "stripe", "linear", "atlassian", "figma", "supabase", "cloudflare",
}

// affixes are what people put around a server's name when they name its
// package or its entry ("github-mcp", "mcp-server-git",
// "@modelcontextprotocol/server-github"), longest first: a name with
// them is the same name.
var affixes = []string{"modelcontextprotocol", "mcpserver", "servermcp", "server", "mcp"}

// core is a folded name without the affixes around it (at least two
// characters are left).
func core(f string) string {
	for changed := true; changed; {
		changed = false
		for _, a := range affixes {
			if rest, ok := strings.CutPrefix(f, a); ok && len(rest) >= 2 {
				f, changed = rest, true
			}
			if rest, ok := strings.CutSuffix(f, a); ok && len(rest) >= 2 {
				f, changed = rest, true
			}
		}
	}
	return f
}

// instance is a name without the digits it ends with, the number people
// give a second server of one kind (postgres2, sqlite3, db1 and db2).
func instance(s string) string {
	t := strings.TrimRight(s, "0123456789")
	if t == "" {
		return s
	}
	return t
}

// oneEdit minimum length: below it one letter more or less makes
// another word (git, gif; time, tim) far too often.
const oneEditMin = 5

// The ways one server name passes for another (Imitation.How).
const (
	HowLookalike = "lookalike characters from another script or with accents"
	HowAffix     = "the same name with -mcp, mcp-, -server or server- around it"
	HowSkeleton  = "a digit or lookalike letter in place of a letter"
	HowOneEdit   = "one letter added, dropped or swapped with its neighbour"
)

// imitates says how server names a and b pass for each other, if they
// do. The rule, from the finest difference to the coarsest:
//
//   - written the same (basic: case, separators, width): one name, not
//     an imitation;
//   - the same once lookalike letters of other scripts and accents are
//     read as Latin (folded): an imitation;
//   - the same but for affixes (core: -mcp, mcp-, -server, server-): an
//     imitation between two servers, but not of a well-known name
//     (github-mcp is how people name the github server);
//   - the same skeleton (fi1esystem, gi7hub, rnemory): an imitation;
//   - the same but for the digits they end with (postgres, postgres2):
//     numbered servers of one kind, not an imitation;
//   - one letter added, dropped or two neighbours swapped (githb,
//     gihtub, filesytem), both at least oneEditMin long: an imitation.
//     A letter replaced by another that does not look like it is not
//     (notion and motion, slack and stack are other words), nor is a
//     name inside another (git and github).
func imitates(a, b string, wellKnown bool) (string, bool) {
	if basic(a) == basic(b) {
		return "", false
	}
	fa, fb := folded(a), folded(b)
	if fa == fb {
		return HowLookalike, true
	}
	ca, cb := core(fa), core(fb)
	if ca == cb {
		if core(basic(a)) != core(basic(b)) {
			return HowLookalike, true // gіthub-mcp: the lookalike is in the name, not the affix
		}
		return HowAffix, !wellKnown
	}
	if skeleton(ca) == skeleton(cb) {
		return HowSkeleton, true
	}
	ia, ib := instance(ca), instance(cb)
	if ia == ib {
		return "", false
	}
	sa, sb := skeleton(ia), skeleton(ib)
	if min(len(sa), len(sb)) >= oneEditMin && oneEdit(sa, sb) {
		return HowOneEdit, true
	}
	return "", false
}

// Imitates says how two configured server names pass for each other, if
// they do (the rule is imitates').
func Imitates(a, b string) (how string, ok bool) { return imitates(a, b, false) }

// oneEdit reports whether a becomes b by adding or dropping one
// character, or by swapping two neighbours.
func oneEdit(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	switch len(b) - len(a) {
	case 1:
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		return a[i:] == b[i+1:]
	case 0:
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	}
	return false
}

// Imitation is a server name that passes for another: another configured
// (or recorded) server's, or a well-known server's.
type Imitation struct {
	Name string
	Of   string
	// WellKnown says Of is a well-known server's name (WellKnown), not
	// one of the servers'.
	WellKnown bool
	How       string
}

func (im Imitation) String() string {
	if im.WellKnown {
		return fmt.Sprintf("server name %q passes for the well-known server %q (%s)", im.Name, im.Of, im.How)
	}
	return fmt.Sprintf("server names %q and %q pass for each other (%s)", im.Of, im.Name, im.How)
}

// Imitations are the imitations among servers, each pair once (in the
// order of the servers: Of before Name), and of the well-known names by
// the servers that are not one; a well-known name that is one of the
// servers is compared as a server.
func Imitations(servers []string) []Imitation {
	var out []Imitation
	seen := map[string]bool{}
	var uniq []string
	for _, s := range servers {
		if b := basic(s); !seen[b] {
			seen[b] = true
			uniq = append(uniq, s)
		}
	}
	for i, a := range uniq {
		for _, b := range uniq[i+1:] {
			if how, ok := Imitates(a, b); ok {
				out = append(out, Imitation{Name: b, Of: a, How: how})
			}
		}
	}
	for _, s := range uniq {
		for _, w := range WellKnown {
			if seen[w] {
				continue // one of the servers: compared above
			}
			if how, ok := imitates(s, w, true); ok {
				out = append(out, Imitation{Name: s, Of: w, WellKnown: true, How: how})
				break
			}
		}
	}
	return out
}
