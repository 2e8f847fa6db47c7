package sandbox

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/config"
)

// requireLandlock skips, loudly, where the kernel has no Landlock; CI's
// kernel has it, and AQLGUARD_REQUIRE_LANDLOCK=1 makes its absence a
// failure.
func requireLandlock(t testing.TB, minABI int) {
	t.Helper()
	if v := abi(); v < minABI {
		msg := "SKIP (sandbox not tested): this kernel's Landlock ABI is " + strconv.Itoa(v) + ", the test needs " + strconv.Itoa(minABI)
		if os.Getenv("AQLGUARD_REQUIRE_LANDLOCK") == "1" {
			t.Fatal(msg + " and AQLGUARD_REQUIRE_LANDLOCK=1")
		}
		t.Skip(msg)
	}
}

var probeBin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "sandboxprobe-bin-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "sandboxprobe")
	b, err := exec.Command("go", "build", "-o", out, "../internal/fixture/sandboxprobe").CombinedOutput()
	if err != nil {
		return "", &buildError{string(b)}
	}
	return out, nil
})

type buildError struct{ out string }

func (e *buildError) Error() string { return "building sandboxprobe: " + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if p, err := probeBin(); err == nil {
		os.RemoveAll(filepath.Dir(p))
	}
	os.Exit(code)
}

// probeWorld is a fake home with a secret in ~/.ssh, the directory the
// probe is given, and a TCP listener it is not granted, counting the
// connections it accepts.
type probeWorld struct {
	home, dir, secret, addr string
	accepted                atomic.Int32
}

func newProbeWorld(t *testing.T) *probeWorld {
	root := t.TempDir()
	w := &probeWorld{home: filepath.Join(root, "home")}
	w.dir = filepath.Join(w.home, "work")
	w.secret = filepath.Join(w.home, ".ssh", "id_rsa")
	for _, d := range []string{w.dir, filepath.Dir(w.secret)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(w.secret, []byte("-----BEGIN FAKE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			w.accepted.Add(1)
			c.Close()
		}
	}()
	w.addr = ln.Addr().String()
	return w
}

// start runs the probe under its grant until its start attempts are
// done (its stdin closed at once, it exits after them) and returns what
// it said of each.
func (w *probeWorld) start(t *testing.T, mode string) (lines []string, g Grant) {
	t.Helper()
	bin, err := probeBin()
	if err != nil {
		t.Fatal(err)
	}
	s := config.Server{Name: "probe", Command: bin, Args: []string{"-dir", w.dir, "-connect", w.addr},
		Env: map[string]string{"HOME": w.home}, Sandbox: config.Sandbox{Mode: mode, Network: "auto"}}
	g = Derive(s, Env{Home: w.home, Dir: w.dir})
	cmd := exec.Command(bin, s.Args...)
	cmd.Env = append(os.Environ(), "HOME="+w.home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdin = strings.NewReader("")
	done := make(chan error, 1)
	if err := Launch(g, cmd, cmd.Start, func() { done <- cmd.Wait() }); err != nil {
		t.Fatalf("Launch: %v", err)
	}
	<-done
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		if l, ok := strings.CutPrefix(sc.Text(), "sandboxprobe: start: "); ok {
			lines = append(lines, l)
		}
	}
	return lines, g
}

// TestProbeRefusedUnderAutoAndFreeUnconfined: the misbehaving server
// reads ~/.ssh/id_rsa, writes in the home outside its directory,
// connects to a port it was not granted and has a shell do the same:
// unconfined it does all of it; under the grant its entry implies every
// attempt is refused by the kernel, and its own directory stays its.
func TestProbeRefusedUnderAutoAndFreeUnconfined(t *testing.T) {
	requireLandlock(t, 4)
	w := newProbeWorld(t)

	free, _ := w.start(t, "off")
	want := []string{"write " + filepath.Join(w.dir, "start.txt"), "read " + w.secret, "write " + filepath.Join(w.home, "probe-start.txt"),
		"connect " + w.addr, "shell read " + w.secret, "shell write " + filepath.Join(w.home, "shell-start.txt"), "shell connect " + w.addr}
	if len(free) != len(want) {
		t.Fatalf("unconfined, the probe said %q; want %d attempts", free, len(want))
	}
	for i, l := range free {
		if !strings.HasPrefix(l, want[i]+": ok") {
			t.Errorf("unconfined: %q, want %q: ok", l, want[i])
		}
	}
	// The listener counts as it accepts, after the probe is done.
	for deadline := time.Now().Add(10 * time.Second); w.accepted.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := w.accepted.Load(); n != 2 {
		t.Errorf("unconfined: %d connections accepted, want 2 (the probe's and its shell's)", n)
	}
	for _, f := range []string{"probe-start.txt", "shell-start.txt"} {
		if err := os.Remove(filepath.Join(w.home, f)); err != nil {
			t.Errorf("unconfined: %v", err)
		}
	}

	w.accepted.Store(0)
	confined, g := w.start(t, "auto")
	t.Logf("grant: %s\nconfined, the probe said:\n%s", g.Summary(), strings.Join(confined, "\n"))
	if len(confined) != len(want) {
		t.Fatalf("confined, the probe said %q; want %d attempts", confined, len(want))
	}
	if !strings.HasPrefix(confined[0], want[0]+": ok") {
		t.Errorf("confined: %q: the directory it was given is its to write", confined[0])
	}
	for i, l := range confined[1:] {
		if !strings.HasPrefix(l, want[i+1]+": ") || strings.HasPrefix(l, want[i+1]+": ok") {
			t.Errorf("confined: %q, want %s refused", l, want[i+1])
		}
		if !strings.Contains(strings.ToLower(l), "permission denied") {
			t.Errorf("confined: %q does not say permission denied", l)
		}
	}
	if n := w.accepted.Load(); n != 0 {
		t.Errorf("confined: %d connections accepted, want none", n)
	}
	for _, f := range []string{"probe-start.txt", "shell-start.txt"} {
		if _, err := os.Stat(filepath.Join(w.home, f)); err == nil {
			t.Errorf("confined: the probe wrote ~/%s", f)
		}
	}
	if g.CanRead(w.secret) || g.CanConnect(uint16(mustPort(t, w.addr))) {
		t.Errorf("the grant %s lets it read the secret or connect", g.Summary())
	}
}

func mustPort(t *testing.T, addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range p {
		n = n*10 + int(c-'0')
	}
	return n
}
