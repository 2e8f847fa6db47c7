package effects

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/aqlguard/aqlguard/policy"
)

// A Profile is what aqlguard ships about one well-known server: for each
// of its tools, the effects and argument roles a person read off the
// server's source and documentation, and the definitions (MatchKey) the
// profile was made from. A tool whose definition matches none of them
// gets nothing from the profile.
//
// Profiles are JSON files in profiles/, one per server, made by
// `go run ./effects/cmd/profile` from the tools/list of the real server
// (npm servers, run here) or from its published source (the Python
// servers), which the file's made_from says.
type Profile struct {
	// Name is the profile's own name ("filesystem"), shown to the human.
	Name string `json:"name"`
	// Server says which server it is: its package and the version the
	// definitions were taken from.
	Package string `json:"package"`
	Version string `json:"version"`
	// MadeFrom says how the definitions were read (the command run, or
	// the source file and commit).
	MadeFrom string `json:"made_from"`
	// Roots says where the server's roots are on its command line (the
	// filesystem server's allowed directories): every argument after the
	// first one that contains one of ArgsAfter. Empty: the command line
	// names no roots.
	Roots struct {
		ArgsAfter []string `json:"args_after,omitempty"`
		// Options, when set, narrows ArgsAfter: of the arguments after,
		// only the values of these options are roots, written as
		// "--repository DIR", "--repository=DIR" or "-r DIR" (the git
		// server's --repository). Other arguments are not roots.
		Options []string `json:"options,omitempty"`
	} `json:"roots"`
	// Tools are the profile's tools by name.
	Tools map[string]ProfileTool `json:"tools"`
	// Sandbox is what the server needs of its sandbox beyond what its
	// entry implies; nil: nothing more.
	Sandbox *ProfileSandbox `json:"sandbox,omitempty"`
}

// ProfileTool is one tool of a profile.
type ProfileTool struct {
	// Effects as a config writes them ("read", "write, delete", "none").
	Effects string `json:"effects"`
	// Arguments gives the role of each argument (a dotted path into
	// nested objects; "[]" is not written: an array's elements have
	// their array's role), as a config writes roles.
	Arguments map[string]string `json:"arguments,omitempty"`
	// Why says in plain words what the tool does, for the human.
	Why string `json:"why"`
	// Confined says the tool's writes and deletes land only in the
	// server's own store (the memory server's graph, a notes server's
	// memo), not in the user's files, a database they name or a remote
	// service: undoing them costs the server's data, nothing else.
	Confined bool `json:"confined,omitempty"`
	// Flow says what the tool's results are to a session's flows:
	// "private" (private data: a repository's files, a database's rows,
	// cookies), "untrusted" (text anyone may have written: an issue, a
	// web page), or both. A tool whose effects say send is untrusted
	// without it (what it fetches comes from outside).
	Flow string `json:"flow,omitempty"`
	// Definitions are the MatchKeys of the definitions the profile was
	// made from.
	Definitions []string `json:"definitions"`

	effects policy.Effects
	roles   map[string]policy.Role
}

// Only the profiles: their captures (profiles/testdata) are what tests
// and the generator read, not what the guard ships.
//
//go:embed profiles/*.json
var profileFiles embed.FS

var (
	loadProfiles = sync.OnceValues(func() ([]*Profile, error) { return readProfiles(profileFiles) })
	// byKey indexes every profile tool by the MatchKeys it was made from.
	byKey = sync.OnceValue(func() map[string]profileMatch {
		ps, _ := loadProfiles()
		out := map[string]profileMatch{}
		for _, p := range ps {
			for name, t := range p.Tools {
				for _, k := range t.Definitions {
					out[k] = profileMatch{p, name}
				}
			}
		}
		return out
	})
)

type profileMatch struct {
	profile *Profile
	tool    string
}

// Profiles are the shipped profiles, in name order. An error means a
// shipped file is broken, which a test catches before release.
func Profiles() ([]*Profile, error) { return loadProfiles() }

// readProfiles reads and checks every profile in dir.
func readProfiles(files fs.FS) ([]*Profile, error) {
	names, err := fs.Glob(files, "profiles/*.json")
	if err != nil {
		return nil, err
	}
	var out []*Profile
	for _, name := range names {
		b, err := fs.ReadFile(files, name)
		if err != nil {
			return nil, err
		}
		p, err := ParseProfile(b)
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", path.Base(name), err)
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ParseProfile reads one profile and checks its effects and roles.
func ParseProfile(b []byte) (*Profile, error) {
	var p Profile
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	if p.Name == "" || p.Package == "" || p.MadeFrom == "" {
		return nil, fmt.Errorf("name, package and made_from are required")
	}
	if err := p.Sandbox.check(); err != nil {
		return nil, err
	}
	for name, t := range p.Tools {
		e, err := policy.ParseEffects(t.Effects)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", name, err)
		}
		t.effects = e
		t.roles = map[string]policy.Role{}
		for arg, r := range t.Arguments {
			role, err := policy.ParseRole(r)
			if err != nil {
				return nil, fmt.Errorf("tool %s, argument %s: %w", name, arg, err)
			}
			t.roles[arg] = role
		}
		if len(t.Definitions) == 0 {
			return nil, fmt.Errorf("tool %s: no definitions: a profile applies only to definitions it was made from", name)
		}
		if t.Why == "" {
			return nil, fmt.Errorf("tool %s: why is required (what the human is shown)", name)
		}
		if _, _, err := ParseFlow(t.Flow); err != nil {
			return nil, fmt.Errorf("tool %s: %w", name, err)
		}
		p.Tools[name] = t
	}
	return &p, nil
}

// Match finds the profile tool made from a definition exactly like d
// (MatchKey), if any.
func Match(d Definition) (*Profile, *ProfileTool, bool) {
	m, ok := byKey()[MatchKey(d)]
	if !ok || m.tool != d.Name {
		return nil, nil, false
	}
	t := m.profile.Tools[m.tool]
	return m.profile, &t, true
}

// ProfileEffects are the tool's effects, parsed.
func (t *ProfileTool) ProfileEffects() policy.Effects { return t.effects }

// Roles are the tool's argument roles, parsed, by the path the profile
// writes.
func (t *ProfileTool) Roles() map[string]policy.Role { return t.roles }

// ParseFlow reads a profile tool's flow: "private", "untrusted", both
// (comma-separated) or "".
func ParseFlow(s string) (private, untrusted bool, err error) {
	for w := range strings.SplitSeq(s, ",") {
		switch strings.TrimSpace(w) {
		case "":
		case "private":
			private = true
		case "untrusted":
			untrusted = true
		default:
			return false, false, fmt.Errorf("flow %q: write private, untrusted or both", s)
		}
	}
	return private, untrusted, nil
}
