// Package xtest drives real dialogs in tests: a private Xvfb display,
// xdotool for the keyboard and window search, xclip for the clipboard.
package xtest

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Require skips the test, loudly, when the X tools are missing, or fails
// it when AQLGUARD_REQUIRE_X=1 (set by .ci/run, which installs them).
func Require(t testing.TB) {
	t.Helper()
	var missing []string
	for _, tool := range []string{"Xvfb", "zenity", "xdotool", "xclip"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "missing " + strings.Join(missing, ", ") + " (apt-get install xvfb zenity xdotool xclip; .ci/run does)"
	if os.Getenv("AQLGUARD_REQUIRE_X") == "1" {
		t.Fatal(msg)
	}
	t.Skip("\n!!!!!!!! SKIPPING dialog test: " + msg + " !!!!!!!!")
}

// StartXvfb starts a private X server, points DISPLAY at it (for the
// test and every process it starts) and returns the display.
func StartXvfb(t testing.TB) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", "1280x1024x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting Xvfb: %v", err)
	}
	w.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case n := <-line:
		if n == "" {
			t.Fatal("Xvfb reported no display number")
		}
		t.Setenv("DISPLAY", ":"+n)
		t.Setenv("WAYLAND_DISPLAY", "")
		return ":" + n
	case <-time.After(30 * time.Second):
		t.Fatal("Xvfb did not start within 30s")
	}
	return ""
}

// Do runs xdotool and returns its output.
func Do(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "xdotool", args...).Output()
	if err != nil {
		t.Fatalf("xdotool %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// Window waits for a window with this exact title, focuses it and
// returns its id.
func Window(t testing.TB, title string) string {
	t.Helper()
	ids := strings.Fields(Do(t, "search", "--sync", "--name", "^"+regexp.QuoteMeta(title)+"$"))
	if len(ids) == 0 {
		t.Fatalf("no window %q", title)
	}
	w := ids[0]
	if got := Do(t, "getwindowname", w); got != title {
		t.Fatalf("window title %q, want %q", got, title)
	}
	_ = exec.Command("xdotool", "windowactivate", "--sync", w).Run()
	Do(t, "windowfocus", "--sync", w)
	time.Sleep(300 * time.Millisecond) // let GTK settle its focus on a loaded machine
	return w
}

// CopySelection selects everything in the focused widget, copies it and
// returns the clipboard.
func CopySelection(t testing.TB, w string) string {
	t.Helper()
	Do(t, "key", "--window", w, "ctrl+a", "ctrl+c")
	for i := 0; i < 20; i++ {
		time.Sleep(150 * time.Millisecond)
		out, err := exec.Command("xclip", "-o", "-selection", "clipboard").Output()
		if err == nil && len(out) > 0 {
			return string(out)
		}
	}
	t.Fatal("nothing was copied")
	return ""
}
