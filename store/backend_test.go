package store

import (
	"context"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/config"
)

// TestOpenBackend: the state directory opens by its registered name (or
// none), asks for its anchor only when it writes, and a name this build
// lacks is an error that says what it has.
func TestOpenBackend(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	anchors := 0
	newAnchor := func() func(string) error {
		anchors++
		return func(string) error { return nil }
	}
	for _, name := range []string{"", config.StateBolt} {
		cfg := &config.Config{StateDir: dir, State: config.State{Backend: name}}
		st, err := OpenBackend(ctx, cfg, BackendOptions{NewAnchor: newAnchor})
		if err != nil {
			t.Fatalf("backend %q: %v", name, err)
		}
		if _, ok := st.(*Store); !ok {
			t.Errorf("backend %q opened a %T", name, st)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if anchors != 2 {
		t.Errorf("a writing state directory asked for %d anchors in two opens", anchors)
	}
	st, err := OpenBackend(ctx, &config.Config{StateDir: dir}, BackendOptions{Options: Options{ReadOnly: true}, NewAnchor: newAnchor})
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	if anchors != 2 {
		t.Error("a read-only open asked for an anchor")
	}
	_, err = OpenBackend(ctx, &config.Config{StateDir: dir, State: config.State{Backend: "mysql"}}, BackendOptions{})
	if err == nil || !strings.Contains(err.Error(), `[state] backend = "mysql" is not in this build (it has bbolt`) {
		t.Errorf("an unknown backend: %v", err)
	}
}
