package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The socket is 0600 from the moment it has its name, nothing is left
// beside it, and closing removes it.
func TestListenUnix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.sock")
	ln, err := listenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want a 0600 socket", fi.Mode())
	}
	if ln.Addr().String() != path {
		t.Errorf("Addr %q, want %q", ln.Addr(), path)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d entries beside the socket, want none: %v", len(entries)-1, entries)
	}
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dialing the socket: %v", err)
	}
	c.Close()
	ln.Close()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the socket is still there after Close: %v", err)
	}
	if _, err := listenUnix("relative.sock"); err == nil {
		t.Error("a relative path was accepted")
	}
}

// With auth = "none", a process of another user that reaches the socket
// (its mode loosened here, as a careless chmod would) is refused by its
// credentials. Needs root, to run the dialer as nobody.
func TestSameUserOnly(t *testing.T) {
	if os.Getenv("AQLGUARD_TEST_DIAL") != "" {
		c, err := net.Dial("unix", os.Getenv("AQLGUARD_TEST_DIAL"))
		if err != nil {
			os.Exit(3)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		var b [1]byte
		if _, err := c.Read(b[:]); err != nil {
			os.Exit(4) // closed by the server: refused
		}
		os.Exit(0)
	}
	if runtime.GOOS != "linux" || os.Getuid() != 0 {
		t.Skip("needs root on Linux to dial as another user")
	}
	// A directory nobody can reach, with a copy of this test binary.
	dir, err := os.MkdirTemp("", "aqlguard-peer-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dialer := filepath.Join(dir, "dialer.test")
	if err := os.WriteFile(dialer, self, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "mcp.sock")
	raw, err := listenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	ln := sameUserOnly{raw}
	defer ln.Close()
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	cmd := exec.Command(dialer, "-test.run=^TestSameUserOnly$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AQLGUARD_TEST_DIAL="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running the dialer as nobody: %v %s", err, out)
	}
	if code != 4 {
		t.Fatalf("the other user's connection: exit %d (%s), want 4 (closed by the server)", code, strings.TrimSpace(string(out)))
	}
	select {
	case c := <-accepted:
		c.Close()
		t.Fatal("a connection of another user was accepted")
	default:
	}
	// This user's own connection is accepted.
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("this user's connection was not accepted")
	}
}
