package proxy

import (
	"context"
	"os"
	"slices"

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
	srv := f.serverEntry(a.Server)
	local := srv.URL == "" // a remote server's paths are not this machine's
	home, cwd := "", ""
	if local {
		home, cwd = serverHome(srv), serverCwd(srv)
	}
	a.Home = home
	needRoots := a.EffectSource != policy.SourceNone &&
		(a.Effects.Has(policy.EffectWrite) || a.Effects.Has(policy.EffectDelete))
	a.Places = make([]evaluator.Place, len(values))
	for i, v := range values {
		lex := paths.Canonical(v.Raw, home, cwd)
		resolved := lex
		if local {
			resolved = ResolvePlace(lex)
		}
		a.Places[i] = evaluator.Place{Arg: v.Arg, Lexical: lex, Resolved: resolved}
		needRoots = needRoots || lex.Climbs
	}
	a.Roots = f.rootsOf(ctx, srv, op, home, cwd, needRoots)
	a.RootsKnown = len(a.Roots) > 0
	if local {
		a.Roots = ResolveRoots(a.Roots)
	}
}

// rootsOf are the clean roots of a server: its entry's, else those its
// command line names with those its client declares (asked of the
// client when ask and none are known yet).
func (f *Front) rootsOf(ctx context.Context, srv policy.Server, op *catalog.Operation, home, cwd string, ask bool) []string {
	if configured := srv.RootPaths(); len(configured) > 0 {
		return configured
	}
	var roots []string
	if prof := effects.ProfileNamed(op.Model.Profile); prof != nil && srv.Command != "" {
		for _, r := range prof.RootsOf(srv.Command, srv.Args) {
			if p := paths.Canonical(r, home, cwd); p.OK {
				roots = append(roots, p.Clean)
			}
		}
	}
	client, known := f.Session.ClientRoots()
	if !known && ask && len(roots) == 0 {
		client, _ = f.Session.AskClientRoots(ctx)
	}
	for _, r := range client {
		if !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	return roots
}

// serverEntry is the configured entry of a server (zero if none).
func (f *Front) serverEntry(name string) policy.Server {
	for _, s := range f.shared.CurrentConfig().Servers {
		if s.Name == name {
			return s
		}
	}
	return policy.Server{}
}

// serverHome is the home directory a stdio server's "~" means: HOME in
// its entry's environment, else aqlguard's own, which it inherits.
func serverHome(s policy.Server) string {
	if h := s.Env["HOME"]; h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// serverCwd is the directory a stdio server resolves relative paths in:
// its entry's cwd, else aqlguard's working directory, which it inherits.
func serverCwd(s policy.Server) string {
	if s.Cwd != "" {
		return s.Cwd
	}
	d, _ := os.Getwd()
	return d
}
