package proxy

import (
	"context"
	"log/slog"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/downstream"
)

// StartCatalog starts the configured servers and derives the catalog of
// what they offer now, for the commands that look at a policy against the
// real tools (policy check --servers, policy explain). The caller closes
// the pool; on error it is closed already and nil.
func StartCatalog(ctx context.Context, cfg *config.Config, pol *policy.Policy, version string, log *slog.Logger) (*catalog.Catalog, *downstream.Pool, error) {
	pool := downstream.Start(ctx, cfg.Servers, downstream.Options{Version: version, Log: log})
	cat, err := BuildCatalog(cfg, pol, pool.Servers(), nil)
	if err != nil {
		_ = pool.Close()
		return nil, nil, err
	}
	return cat, pool, nil
}

// BuildCatalog derives the operation catalog: introspection, the safety
// loop's operations for the policy's loop mode, and the operations of
// every ready server, with the config's category overrides and effects,
// and what a human reviewed (reviewed; nil: nothing was). Notes (tools
// the config names that do not exist, patterns RE2 cannot compile) are in
// the catalog's Notes.
func BuildCatalog(cfg *config.Config, pol *policy.Policy, servers []*downstream.Server, reviewed func(server, tool string) bool) (*catalog.Catalog, error) {
	cat := catalog.New()
	if err := cat.Add(catalog.IntrospectOperation()); err != nil {
		return nil, err
	}
	for _, op := range LoopOperations(pol.Loop) {
		if err := cat.Add(op); err != nil {
			return nil, err
		}
	}
	overrides := map[string]map[string]string{}
	effectsOf := map[string]map[string]string{}
	managed, open := map[string]bool{}, map[string]bool{}
	for _, s := range cfg.Servers {
		overrides[s.Name] = s.Categories
		effectsOf[s.Name] = s.Effects
		managed[s.Name] = s.Managed || cfg.Managed == nil
		open[s.Name] = s.AllowUndeclaredArguments
	}
	for _, s := range servers {
		st := s.State()
		// A restarting server keeps its operations (its tools as they were
		// when it died): a call to one is told the server is restarting
		// and when to try again, not that no such operation exists.
		if st.Status != downstream.Ready && (st.Status != downstream.Restarting || len(st.Tools) == 0) {
			continue
		}
		var rev func(string) bool
		if reviewed != nil {
			name := s.Name
			rev = func(tool string) bool { return reviewed(name, tool) }
		}
		cat.AddServer(catalog.ServerTools{Server: s.Name, Tools: st.Tools, Categories: overrides[s.Name], Effects: effectsOf[s.Name],
			Reviewed: rev, Policy: pol, OverridesManaged: managed[s.Name], AllowUndeclared: open[s.Name]})
	}
	return cat, nil
}
