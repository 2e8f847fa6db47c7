//go:build unix

package main

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestServeTokenKeepsTheConfigsOwner: root adding a client to a
// service's config (root:aqlguard 0640, as docs/deploy.md has it) leaves
// it root:aqlguard; a root:root file would lock the service out of its
// own config.
func TestServeTokenKeepsTheConfigsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED LOUDLY: needs root to give the config another group (CI runs as root)")
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte("agent = \"svc\"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	const gid = 65534 // nogroup: any group but root's
	if err := os.Chown(path, 0, gid); err != nil {
		t.Fatal(err)
	}
	if err := serveTokenAdd(path, "laptop", "", io.Discard); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 0 || st.Gid != gid || fi.Mode().Perm() != 0o640 {
		t.Fatalf("after serve token add: uid %d gid %d mode %#o, want 0 %d 0640", st.Uid, st.Gid, fi.Mode().Perm(), gid)
	}
}
