package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/fixture/faultinject"
	"github.com/aqlguard/aqlguard/store"
)

// A state directory on a read-only mount (a backup, or a disk the
// kernel turned read-only): `audit verify` checks it, and a verb that
// writes says the directory cannot be written, never that it is damaged
// and never to reset it.
func TestReadOnlyStateDirectory(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no user config: embedded defaults
	src := t.TempDir()
	st, err := store.Open(context.Background(), src, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := st.Update(context.Background(), func(tx *store.Tx) error {
		return tx.PutBlock(store.Block{Principal: "worker", VerificationID: "ver_1", Reason: "rm -rf /", BlockedAt: now})
	}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := st.Append(context.Background(), store.Record{Time: now, Kind: "outcome", Principal: "worker", Operation: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	dir, readOnly := faultinject.BindMount(t, src)
	readOnly(true)
	var out, errOut bytes.Buffer
	if code := run([]string{"audit", "verify", "--state-dir", dir}, strings.NewReader(""), &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), "audit chain verified: 3 records") {
		t.Fatalf("audit verify on a read-only copy: exit %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	code := run([]string{"unblock", "--state-dir", dir, "worker"}, strings.NewReader(""), &out, &errOut)
	msg := errOut.String()
	if code == 0 || !strings.Contains(msg, "cannot be written (read-only file system)") ||
		strings.Contains(msg, "damaged") || strings.Contains(msg, "state reset") {
		t.Fatalf("unblock on a read-only state directory: exit %d\nstderr: %s", code, msg)
	}
}
