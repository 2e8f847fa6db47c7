package proxy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/guard"
	"github.com/aqlguard/aqlguard/store"
)

func TestRestartOnlyChanges(t *testing.T) {
	base := func() *config.Config {
		c, err := policy.Parse([]byte("mode = \"semantic\"\n"), "a.toml")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tests := []struct {
		name   string
		change func(*config.Config)
		want   []string
	}{
		{"nothing", func(*config.Config) {}, nil},
		{"mode", func(c *config.Config) { c.Mode = "single" }, []string{"mode"}},
		{"state and audit", func(c *config.Config) { c.StateDir = "/x"; c.Audit.Sync = "always" }, []string{"audit", "state_dir"}},
		{"a policy setting is not one", func(c *config.Config) { c.Safety.Deny = []string{"x"} }, nil},
	}
	for _, tt := range tests {
		old, cfg := base(), base()
		tt.change(cfg)
		got := RestartOnlyChanges(old, cfg)
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestReload: a configuration that does not load changes nothing; one
// that does puts its policy in force; both are audited.
func TestReload(t *testing.T) {
	ctx := context.Background()
	parse := func(doc string) *config.Config {
		c, err := policy.Parse([]byte(doc), "c.toml")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cfg := parse("[safety]\ndeny = [\"a*\"]\n")
	pol, err := policy.Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	g := &guard.Guard{Policy: pol, State: st}
	sh := &Shared{Mode: ModeSemantic, Config: cfg, Guard: g}
	rc := sh.RelayConfig()
	sh.Reload(ctx, rc, func() (*config.Config, error) { return nil, errors.New("line 3: bad") }, "test")
	if g.CurrentPolicy() != pol {
		t.Fatal("a config that did not load was put in force")
	}
	next := parse("[safety]\ndeny = [\"b*\"]\n")
	sh.Reload(ctx, rc, func() (*config.Config, error) { return next, nil }, "test")
	if g.CurrentPolicy().Version == pol.Version || sh.CurrentConfig() != next {
		t.Fatal("the new config is not in force")
	}
	var results []string
	if err := st.View(ctx, func(tx *store.Tx) error {
		return tx.Records(0, func(r store.Record, _ []byte) error {
			if r.Kind == "policy" {
				results = append(results, r.Result)
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || !strings.HasPrefix(results[0], "refused: line 3: bad") || !strings.HasPrefix(results[1], "policy ") {
		t.Fatalf("audit: %q", results)
	}
}
