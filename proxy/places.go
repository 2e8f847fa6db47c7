package proxy

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/effects"
	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/policy/paths"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/guard"
)

// The guard judges a call's paths against its server's roots without
// touching the disk (evaluator.Place): the front reads them for it.
// Each value the evaluator reads in a path role (PathValues, the same
// reading of roles the decision uses) is made one clean absolute place
// with the server's home and working directory, and its symbolic links
// are followed (ResolvePlace); the roots are the server's entry's, else
// those its command line names (its profile says where) with those its
// client declares, asked of the client only when a write or a climb
// needs them.

// readPlaces fills a tool call's places, its server's roots and home.
func (f *Front) readPlaces(ctx context.Context, r *guard.Request, op *catalog.Operation) {
	a := &r.Action
	values := evaluator.PathValues(f.Guard.CurrentPolicy(), evaluator.Step{Operation: a.Operation, Server: a.Server,
		Tool: a.Tool, Category: a.Category, Arguments: a.Arguments, Roles: a.Roles, Modeled: a.Modeled,
		Effects: a.Effects, EffectSource: a.EffectSource})
	if len(values) == 0 {
		return
	}
	sp := f.placesOf(a.Server, op.Model.Profile)
	a.Home = sp.home
	needRoots := a.EffectSource != policy.SourceNone &&
		(a.Effects.Has(policy.EffectWrite) || a.Effects.Has(policy.EffectDelete))
	a.Places = make([]evaluator.Place, len(values))
	for i, v := range values {
		lex := paths.Canonical(v.Raw, sp.home, sp.cwd)
		resolved := lex
		if sp.local {
			resolved = ResolvePlace(lex)
		}
		a.Places[i] = evaluator.Place{Arg: v.Arg, Lexical: lex, Resolved: resolved}
		needRoots = needRoots || lex.Climbs
	}
	roots, added := sp.roots, false
	if !sp.configured {
		// The client's roots add to the command line's (asked of the
		// client only when a write or a climb needs them and none are
		// known).
		client, known := f.Session.ClientRoots()
		if !known && needRoots && len(roots) == 0 {
			client, _ = f.Session.AskClientRoots(ctx)
		}
		for _, c := range client {
			if !slices.Contains(roots, c) {
				roots, added = append(slices.Clip(roots), c), true
			}
		}
	}
	a.Roots, a.RootsKnown = roots, len(roots) > 0
	switch {
	case !sp.local || !a.RootsKnown:
	case added:
		a.Roots = resolvedRoots(roots)
	default:
		a.Roots = sp.resolved
	}
}

// serverPlaces is what reading a server's paths takes from its entry,
// worked out once per catalog: the home and working directory its
// paths are read with, whether it runs on this machine, and its roots
// (its entry's, else those its command line names, as its profile says).
type serverPlaces struct {
	home, cwd  string
	local      bool
	roots      []string
	configured bool
	// resolved are roots with their links resolved beside them
	// (ResolveRoots), for a server on this machine.
	resolved []string
}

// placesOf is server's serverPlaces (profile: the profile its tools
// match), kept with the catalog.
func (f *Front) placesOf(server, profile string) serverPlaces {
	key := server + "\x00" + profile
	f.mu.RLock()
	sp, ok := f.places[key]
	f.mu.RUnlock()
	if ok {
		return sp
	}
	srv := f.serverEntry(server)
	sp.local = srv.URL == "" // a remote server's paths are not this machine's
	if sp.local {
		sp.home, sp.cwd = serverHome(srv), serverCwd(srv)
	}
	if configured := srv.RootPaths(); len(configured) > 0 {
		sp.roots, sp.configured = configured, true
	} else if prof := effects.ProfileNamed(profile); prof != nil && srv.Command != "" {
		for _, r := range prof.RootsOf(srv.Command, srv.Args) {
			if p := paths.Canonical(r, sp.home, sp.cwd); p.OK {
				sp.roots = append(sp.roots, p.Clean)
			}
		}
	}
	if sp.local {
		sp.resolved = ResolveRoots(sp.roots)
	}
	f.mu.Lock()
	if f.places == nil {
		f.places = map[string]serverPlaces{}
	}
	f.places[key] = sp
	f.mu.Unlock()
	return sp
}

// rootsResolved keeps each set of roots with their links followed
// (ResolveRoots), by the roots joined: a server's roots are the same call
// after call, and looking them up on disk each time was a third of what
// reading a call's paths cost. Bounded: a client that changes its roots
// often starts the cache over.
var rootsResolved struct {
	sync.Mutex
	byRoots map[string][]string
}

const maxRootsResolved = 64

func resolvedRoots(roots []string) []string {
	key := strings.Join(roots, "\x00")
	rootsResolved.Lock()
	got, ok := rootsResolved.byRoots[key]
	rootsResolved.Unlock()
	if ok {
		return got
	}
	got = ResolveRoots(roots)
	rootsResolved.Lock()
	if rootsResolved.byRoots == nil || len(rootsResolved.byRoots) >= maxRootsResolved {
		rootsResolved.byRoots = map[string][]string{}
	}
	rootsResolved.byRoots[key] = got
	rootsResolved.Unlock()
	return got
}

// serverEntry is the configured entry of a server (zero if none).
func (f *Front) serverEntry(name string) config.Server {
	for _, s := range f.shared.CurrentConfig().Servers {
		if s.Name == name {
			return s
		}
	}
	return config.Server{}
}

// serverHome is the home directory a stdio server's "~" means: HOME in
// its entry's environment, else aqlguard's own, which it inherits.
func serverHome(s config.Server) string {
	if h := s.Env["HOME"]; h != "" {
		return h
	}
	return ownHome()
}

// serverCwd is the directory a stdio server resolves relative paths in:
// its entry's cwd, else aqlguard's working directory, which it inherits.
func serverCwd(s config.Server) string {
	if s.Cwd != "" {
		return s.Cwd
	}
	return ownCwd()
}

// ownHome and ownCwd are aqlguard's own home and working directory, read
// once: neither changes while it runs (os.Getwd is two system calls).
var (
	ownHome = sync.OnceValue(func() string { h, _ := os.UserHomeDir(); return h })
	ownCwd  = sync.OnceValue(func() string { d, _ := os.Getwd(); return d })
)
