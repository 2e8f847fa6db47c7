//lint:file-ignore U1000 the helpers here serve the scenario tests, which need not use them all

// Harness: plumbing: stale-build tracking, buffers, and the checks that no process outlives a test (see harness_test.go).

package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/procfs"
)

// ---------------------------------------------------------------------------
// Plumbing

var trackOnce sync.Once

// trackSources stats every file of the repository (but .git, .ci and
// node_modules) once per test binary, so that `go test` records them as
// inputs of the run: its cache cannot see the binaries TestMain builds, and
// would otherwise serve a stale result after aqlguard's source changed.
// launchGuard, startTestServerHTTP and connectDirect call it; a test that
// execs bins.* by other means should call it too. (CI uses -count=1 anyway.)
func trackSources() {
	trackOnce.Do(func() {
		_ = filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return nil
			case d.IsDir() && p != ".." && (d.Name() == ".git" || d.Name() == ".ci" || d.Name() == "node_modules"):
				return filepath.SkipDir
			case d.Type().IsRegular():
				_, _ = os.Stat(p)
			}
			return nil
		})
	})
}

// syncBuffer is a goroutine-safe, bounded bytes.Buffer.
type syncBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	truncated bool
}

const syncBufferMax = 16 << 20

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := syncBufferMax - b.buf.Len(); len(p) > room {
		b.buf.Write(p[:max(room, 0)])
		b.truncated = true
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.truncated {
		return b.buf.String() + "\n[... truncated at 16 MiB]"
	}
	return b.buf.String()
}

// checkProcessGroup fails the test if a live (non-zombie) process remains in
// process group pgid 3s after its leader exited, and then kills the group.
// It does nothing where /proc is missing.
func checkProcessGroup(t *testing.T, pgid int) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := groupMembers(pgid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes left behind in aqlguard's process group %d: %s", pgid, strings.Join(left, "; "))
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processMark is an environment entry unique to one aqlguard run.
func processMark() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "E2E_AQLGUARD_MARK=" + hex.EncodeToString(b) // not AQLGUARD_*: servers do not inherit those
}

// checkMarked fails the test if any live process still carries mark in
// its environment 3 s after aqlguard ended, and kills it.
func checkMarked(t *testing.T, mark string) {
	t.Helper()
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		return
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := marked(mark)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes aqlguard started outlived it: %v", left)
			for pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// marked maps live processes whose environment holds mark to their command lines.
func marked(mark string) map[int]string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	out := map[int]string{}
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, []byte(mark+"\x00")) && !bytes.HasSuffix(env, []byte(mark)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		if st, err := procfs.Read(pid); err == nil && st.Ended() {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		out[pid] = strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return out
}

// groupMembers lists "PID CMDLINE" of live processes whose process group is pgid.
func groupMembers(pgid int) []string {
	var out []string
	for _, p := range procfs.All() {
		if p.Pgrp != pgid || p.Ended() {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.Pid), "cmdline"))
		out = append(out, strconv.Itoa(p.Pid)+" "+strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))))
	}
	return out
}
