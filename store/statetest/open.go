package statetest

import (
	"context"
	"testing"

	"github.com/aqlguard/aqlguard/store"
)

// Open is a fresh bbolt state in t's temporary directory, closed when t
// ends: what a test of something that commits needs of the state.
func Open(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
