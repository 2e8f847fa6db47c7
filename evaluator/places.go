package evaluator

import (
	"sort"
	"strconv"
	"strings"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/policy/paths"
)

// Paths are judged against the roots of the server a call goes to (its
// configuration's roots, else the roots its command line names and its
// client declares): honest work inside them runs, reads, new files,
// edits and moves alike. A write outside them, a path that climbs out of
// them with "..", a path that cannot be read as one place, and a read or
// a write of a sensitive place (the shipped list: SSH and cloud keys,
// keychains, browser profiles, ...) ask a human, saying why in plain
// words. An application's .env inside the roots is the project's own
// (paths.Sensitive.Project): it runs, and the flow judgement follows
// what it held (flows). Reads outside the roots that are none of these run:
// the server keeps its own bounds, and its sandbox others.

// Place is one path argument of a call as its caller read it: the
// evaluator does no I/O, so the caller (the front) reads each value the
// roles say is a path (PathValues) and follows its symbolic links.
type Place struct {
	// Arg is the argument's path (SnakeName parts joined by '.').
	Arg string
	// Lexical is the value read as written (paths.Canonical); Resolved
	// is the same with its symbolic links followed, the place the server
	// reaches (Lexical again where no link is on the way).
	Lexical, Resolved paths.Place
}

// PathValue is one string a call hands a tool in a path role.
type PathValue struct {
	Arg, Raw string
}

// PathValues are the strings of s's arguments in a path role, as the
// evaluator reads roles (the policy's declarations, the tool's model):
// what the caller reads as Places.
func PathValues(p *policy.Policy, s Step) []PathValue {
	if out, ok := topLevelPaths(p, &s); ok {
		return out
	}
	names := namesOf(s)
	sub := subjectsWith(s, names, nil, true, newRoles(p, &s, names))
	var out []PathValue
	for _, v := range sub.Values {
		if v.Role == policy.RolePath && v.String && !v.Key && !v.Derived {
			out = append(out, PathValue{Arg: v.Path, Raw: v.Raw})
		}
	}
	return out
}

// topLevelPaths is PathValues read straight from the arguments, where
// that gives the same: a modelled step whose path roles are all of
// top-level arguments, under a policy that declares no roles of its own
// (the walk of every value is then not needed to find them). ok is false
// where it would not give the same.
func topLevelPaths(p *policy.Policy, s *Step) ([]PathValue, bool) {
	if !s.Modeled || p != nil && (len(p.ArgumentRoles) > 0 || len(p.ShellArguments) > 0) {
		return nil, false
	}
	var out []PathValue
	var keys []string // the argument each value of out is from, in the walk's order
	for arg, role := range s.Roles {
		if role != policy.RolePath {
			continue
		}
		if strings.IndexByte(arg, '.') >= 0 {
			return nil, false // a nested path: the walk finds it
		}
		for key, v := range s.Arguments {
			if policy.SnakeName(key) != arg {
				continue
			}
			switch v := v.(type) {
			case string:
				out, keys = append(out, PathValue{Arg: arg, Raw: v}), append(keys, key)
			case []any:
				for _, e := range v {
					if str, ok := e.(string); ok {
						out, keys = append(out, PathValue{Arg: arg, Raw: str}), append(keys, key)
					} else if _, nested := e.(map[string]any); nested {
						return nil, false
					}
				}
			case map[string]any:
				return nil, false
			}
		}
	}
	if len(out) > 1 {
		// The walk's order: by argument, as the server spells it.
		idx := make([]int, len(out))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(i, j int) bool { return keys[idx[i]] < keys[idx[j]] })
		sorted := make([]PathValue, len(out))
		for i, k := range idx {
			sorted[i] = out[k]
		}
		out = sorted
	}
	return out, true
}

// writes reports whether the step's tool writes or deletes where its
// paths say: a modelled tool whose effects say so. (A tool that could
// do anything asks anyway.)
func writes(s *Step) bool {
	return s.EffectSource != policy.SourceNone && (s.Effects.Has(policy.EffectWrite) || s.Effects.Has(policy.EffectDelete))
}

// judgePlaces is stage 3's question about the call's paths, if one of
// them needs a human: the first place that does, in argument order.
func (c *call) judgePlaces(p *policy.Policy) (match, bool) {
	s := &c.s
	if len(s.Places) == 0 {
		return match{}, false
	}
	w := writes(s)
	verb := "reads"
	if w {
		verb = "writes"
	}
	for _, pl := range s.Places {
		if why, ok := placeQuestion(p, s, pl, w, verb); ok {
			return match{action: policy.ActionRequiresApproval, source: "place", display: "place",
				subject: "argument " + strconv.Quote(pl.Arg), why: why, argumentBound: true}, true
		}
	}
	return match{}, false
}

// placeQuestion says why a place needs a human, if it does.
func placeQuestion(p *policy.Policy, s *Step, pl Place, writes bool, verb string) (string, bool) {
	arg := "argument " + strconv.Quote(pl.Arg)
	for _, form := range []paths.Place{pl.Lexical, pl.Resolved} {
		if !form.OK {
			return "the path " + strconv.Quote(pl.Lexical.Raw) + " in " + arg + " cannot be read as one place (" + form.Why + ")", true
		}
	}
	inside := s.RootsKnown && paths.Within(pl.Lexical.Clean, s.Roots) && paths.Within(pl.Resolved.Clean, s.Roots)
	// A place no project keeps is said first, from either form: a .env
	// that links to an SSH key is the key.
	projectWhy := ""
	for i, form := range []paths.Place{pl.Lexical, pl.Resolved} {
		if i == 1 && form.Clean == pl.Lexical.Clean {
			break
		}
		sens, ok := p.SensitivePaths.Match(form.Clean, s.Home)
		if !ok {
			continue
		}
		where := form.Clean
		if i == 1 {
			where = pl.Lexical.Clean + ", a link to " + form.Clean
		}
		why := "it " + verb + " " + where + ": " + sens.Reason
		if !sens.Project {
			return why, true
		}
		if projectWhy == "" || i == 1 {
			projectWhy = why
		}
	}
	if projectWhy != "" && !inside {
		return projectWhy, true
	}
	roots := strings.Join(s.Roots, ", ")
	switch {
	case writes && !s.RootsKnown && s.RootsOf != "":
		return "it writes " + pl.Lexical.Clean + ", and " + s.RootsOf + " is not known to judge that by", true
	case writes && !s.RootsKnown:
		return "it writes " + pl.Lexical.Clean + ", and no roots are known for the " + p.Title(s.Server) +
			" server to judge that by (its entry's roots, its command line or its client's roots)", true
	case writes && !inside:
		where := pl.Lexical.Clean
		if pl.Resolved.Clean != pl.Lexical.Clean {
			where += " (a link to " + pl.Resolved.Clean + ")"
		}
		return "it writes " + where + ", outside " + rootsName(p, s) + " (" + roots + ")", true
	case pl.Lexical.Climbs && !inside:
		return "the path " + strconv.Quote(pl.Lexical.Raw) + " climbs out with \"..\" to " + pl.Lexical.Clean + placeRoots(p, s, roots), true
	}
	return "", false
}

// placeRoots says where the roots are, for a question ("" when none
// are known).
func placeRoots(p *policy.Policy, s *Step, roots string) string {
	if !s.RootsKnown {
		return ""
	}
	return ", outside " + rootsName(p, s) + " (" + roots + ")"
}

// rootsName names s's roots in a question: the server's, unless the
// caller said whose they are (Step.RootsOf).
func rootsName(p *policy.Policy, s *Step) string {
	if s.RootsOf != "" {
		return s.RootsOf
	}
	return "the " + p.Title(s.Server) + " server's roots"
}

// metadataHosts are the addresses at which a cloud instance hands its
// own credentials to whoever asks from it (AWS, GCP, Azure, Oracle,
// DigitalOcean and OpenStack at 169.254.169.254; AWS ECS task roles at
// 169.254.170.2; AWS over IPv6; Alibaba; GCP's names). A request for
// one from a server on this machine is a read of a sensitive place.
var metadataHosts = map[string]bool{
	"169.254.169.254": true, "169.254.170.2": true, "fd00:ec2::254": true, "100.100.100.200": true,
	"metadata.google.internal": true, "metadata.goog": true, "metadata": true,
}

// judgeURLs is stage 3's question about the call's URLs, if one needs a
// human: a cloud instance's metadata address, where credentials are
// handed out.
func (c *call) judgeURLs() (match, bool) {
	for i := range c.sub.Values {
		v := &c.sub.Values[i]
		if v.Role != policy.RoleURL || !v.String || v.Key {
			continue
		}
		if host := urlHost(v.Raw); metadataHosts[host] {
			return match{action: policy.ActionRequiresApproval, source: "place", display: "place",
				subject: "argument " + strconv.Quote(v.Path), argumentBound: true,
				why: "it sends a request to " + host + ", where a cloud instance hands out its credentials"}, true
		}
	}
	return match{}, false
}

// urlHost is a URL's host in lower case, without a port or brackets;
// "" when there is none. Lexical: a scheme-less "host/path" is read as
// its host too, as a fetching server would.
func urlHost(raw string) string {
	s := strings.TrimSpace(raw)
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		s = s[i+1:]
	}
	if strings.HasPrefix(s, "[") {
		if i := strings.IndexByte(s, ']'); i > 0 {
			return strings.ToLower(s[1:i])
		}
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 && strings.Count(s, ":") == 1 {
		s = s[:i]
	}
	return strings.TrimSuffix(strings.ToLower(s), ".")
}
