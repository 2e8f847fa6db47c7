// Package faultinject is the fault injector of aqlguard's tests: the
// damage an operator meets on a bad day (a full disk, a damaged
// database page, another process holding a lock), made on purpose.
// Tests only; nothing in aqlguard imports it.
package faultinject

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// SmallDisk mounts a tmpfs of size bytes on a new directory and returns
// it; it is unmounted when the test ends. A test that cannot mount one
// (not root, no tmpfs) is skipped, saying so loudly: a full disk is not
// faked.
func SmallDisk(t testing.TB, size int) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		t.Skipf("SKIPPED, NOT TESTED: a full disk needs a tmpfs, and mounting one needs root (uid %d)", os.Geteuid())
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(size)+",mode=0700", "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("SKIPPED, NOT TESTED: a full disk needs a tmpfs, and it could not be mounted: %v: %s", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("unmounting the tmpfs at %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// Fill writes a file in dir until the disk under it is full, and returns
// the function that frees the space again.
func Fill(t testing.TB, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte{'x'}, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			break
		}
	}
	// What is left is smaller than a page: fill it byte by byte.
	for {
		if _, err := f.Write(chunk[:1]); err != nil {
			break
		}
	}
	_ = f.Close()
	return func() {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}

// DamagePages overwrites the header of every bbolt page of the database
// at path from page first on (pages 0 and 1 are its meta pages, which
// bbolt checks itself) with a page type that does not exist, as a bad
// sector or a stray write would leave them.
func DamagePages(t testing.TB, path string, first int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	const pageSize = 4096 // bbolt's on Linux amd64 (the OS page size)
	for off := int64(first) * pageSize; off+16 <= st.Size(); off += pageSize {
		// id (8 bytes), flags (2), count (2), overflow (4)
		if _, err := f.WriteAt([]byte{0xff, 0x7f, 0xff, 0xff}, off+8); err != nil {
			t.Fatal(err)
		}
	}
}

// HoldLock has another process take an exclusive flock(2) on path (as
// another aqlguard would) and returns its pid; the lock is let go when
// the test ends or release is called.
func HoldLock(t testing.TB, path string) (pid int, release func()) {
	t.Helper()
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skipf("SKIPPED, NOT TESTED: holding a lock from another process needs flock(1): %v", err)
	}
	cmd := exec.Command(flock, "--no-fork", "-x", path, "sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	release = func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	t.Cleanup(release)
	// flock(1) holds the lock once it runs sleep.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/comm")
		if string(bytes.TrimSpace(comm)) == "sleep" {
			return cmd.Process.Pid, release
		}
	}
	t.Fatal("flock(1) did not take the lock within 10s")
	return 0, nil
}

// BindMount mounts src at a new directory (a bind mount) and returns it
// with the function that makes that mount read-only or writable again,
// as a file system that turns read-only under a running program does
// (ext4's errors=remount-ro), or a backup mounted read-only. A mount
// cannot turn read-only while files are open for writing on it, so the
// switch puts a new mount over the old one (which stays, detached, for
// the files already open): what is opened after it sees the new one. It
// is unmounted when the test ends. A test that cannot mount (not root)
// is skipped, saying so loudly.
func BindMount(t testing.TB, src string) (dir string, readOnly func(bool)) {
	t.Helper()
	dir = t.TempDir()
	if os.Geteuid() != 0 {
		t.Skipf("SKIPPED, NOT TESTED: a read-only mount needs root (uid %d)", os.Geteuid())
	}
	mount := func(args ...string) error {
		out, err := exec.Command("mount", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("mount %v: %v: %s", args, err, bytes.TrimSpace(out))
		}
		return nil
	}
	if err := mount("--bind", src, dir); err != nil {
		t.Skipf("SKIPPED, NOT TESTED: a bind mount could not be made: %v", err)
	}
	mounts := 1
	t.Cleanup(func() {
		for range mounts {
			if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
				t.Errorf("unmounting %s: %v: %s", dir, err, out)
			}
		}
	})
	return dir, func(ro bool) {
		t.Helper()
		if err := mount("--bind", src, dir); err != nil {
			t.Fatal(err)
		}
		mounts++
		if ro {
			if err := mount("-o", "remount,bind,ro", dir); err != nil {
				t.Fatal(err)
			}
		}
	}
}
