// Package xtest drives real dialogs in tests: a private Xvfb display,
// xdotool for the keyboard and window search, xclip for the clipboard.
//
// Every step is bounded: window search and clipboard reads are polled
// with deadlines and each xdotool or xclip call has its own timeout;
// the limits are generous so that a loaded 2-core machine does not fail
// them.
package xtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

const (
	step    = 30 * time.Second // one xdotool or xclip call
	appear  = 60 * time.Second // a window to appear
	copyTry = 3 * time.Second  // clipboard polling after one ctrl+c
)

// Require skips the test, loudly, when the X tools are missing, or fails
// it when AQLGUARD_REQUIRE_X=1 (set by .ci/run, which installs them).
func Require(t testing.TB) {
	t.Helper()
	var missing []string
	for _, tool := range []string{"Xvfb", "zenity", "xdotool", "xclip", "xwd"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "missing " + strings.Join(missing, ", ") + " (apt-get install xvfb zenity xdotool xclip x11-apps; .ci/run does)"
	if os.Getenv("AQLGUARD_REQUIRE_X") == "1" {
		t.Fatal(msg)
	}
	t.Skip("\n!!!!!!!! SKIPPING dialog test: " + msg + " !!!!!!!!")
}

// StartXvfb starts a private X server, points DISPLAY at it (for the
// test and every process it starts) and returns the display.
func StartXvfb(t testing.TB) string {
	t.Helper()
	return StartXvfbSize(t, "1280x1024x24")
}

// StartXvfbSize is StartXvfb with a screen of the given WxHxDEPTH.
func StartXvfbSize(t testing.TB, screen string) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", screen, "-nolisten", "tcp")
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
		// No accessibility bus to look for, and X11 even where Wayland is
		// around: one less thing for GTK to wait for or to go wrong under
		// load.
		t.Setenv("NO_AT_BRIDGE", "1")
		t.Setenv("GDK_BACKEND", "x11")
		return ":" + n
	case <-time.After(30 * time.Second):
		t.Fatal("Xvfb did not start within 30s")
	}
	return ""
}

// Run runs an X tool with a timeout and returns its trimmed stdout. Its
// error quotes the tool's stderr.
func Run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), step)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %q: %w (%s)", name, args, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// Do runs xdotool and returns its output.
func Do(t testing.TB, args ...string) string {
	t.Helper()
	out, err := Run("xdotool", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Window waits for a mapped window titled exactly title, checks the
// title with getwindowname, focuses it and returns its id.
func Window(t testing.TB, title string) string {
	t.Helper()
	return WindowWhile(t, title, nil)
}

// WindowWhile is Window for a window that a process still to be waited
// for puts up: between tries it calls gone, and when gone reports that
// the process ended (a non-empty account of how), the test fails at once
// with that account instead of waiting out the deadline for a window
// that cannot come. On timeout the failure lists the windows X has and
// takes a screenshot, so that a failure on a loaded machine says what
// was on the screen.
func WindowWhile(t testing.TB, title string, gone func() string) string {
	t.Helper()
	deadline := time.Now().Add(appear)
	pattern := "^" + regexp.QuoteMeta(title) + "$"
	for {
		out, _ := Run("xdotool", "search", "--onlyvisible", "--name", pattern)
		if ids := strings.Fields(out); len(ids) > 0 {
			w := ids[0]
			if name := Do(t, "getwindowname", w); name != title {
				t.Fatalf("window %s is titled %q, want %q", w, name, title)
			}
			Focus(t, w)
			return w
		}
		if gone != nil {
			if how := gone(); how != "" {
				t.Fatalf("no window titled %q: the dialog ended before it appeared (%s); windows now: %s",
					title, how, windowNames())
			}
		}
		if time.Now().After(deadline) {
			Screenshot(t, "no-window")
			t.Fatalf("no window titled %q appeared within %s; windows now: %s", title, appear, windowNames())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// windowNames lists every named window X knows, mapped or not, for a
// failure message.
func windowNames() string {
	out, err := Run("xdotool", "search", "--name", ".")
	if err != nil {
		return "(none found: " + err.Error() + ")"
	}
	var names []string
	for _, w := range strings.Fields(out) {
		name, _ := Run("xdotool", "getwindowname", w)
		names = append(names, fmt.Sprintf("%s %q", w, name))
	}
	return strings.Join(names, ", ")
}

// Focus gives w the keyboard focus (there is no window manager to do it)
// and waits until X says it has it.
func Focus(t testing.TB, w string) {
	t.Helper()
	deadline := time.Now().Add(step)
	for {
		_, err := Run("xdotool", "windowfocus", "--sync", w)
		if got, _ := Run("xdotool", "getwindowfocus"); err == nil && got == w {
			// GTK handles the FocusIn after X reports it; give it a moment.
			time.Sleep(300 * time.Millisecond)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("could not focus window %s: %v", w, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Keys types into the focused window (XTEST, as a keyboard would).
func Keys(t testing.TB, keys ...string) {
	t.Helper()
	Do(t, append([]string{"key", "--clearmodifiers", "--delay", "60"}, keys...)...)
}

// Copy presses pre, then ctrl+a ctrl+c, in the focused window and polls
// the clipboard until done accepts what it holds. It tries again a few
// times (pre moves the focus on, when a dialog needs that to reach its
// text) and returns the last clipboard content it saw.
func Copy(t testing.TB, done func(clipboard string) bool, pre ...string) string {
	t.Helper()
	var got string
	for try := 0; try < 6; try++ {
		Keys(t, append(pre, "ctrl+a", "ctrl+c")...)
		for end := time.Now().Add(copyTry); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if s, err := Run("xclip", "-o", "-selection", "clipboard"); err == nil {
				got = s
				if done(got) {
					return got
				}
			}
		}
	}
	return got
}

// CopySelection focuses w, copies everything in its focused widget and
// returns the clipboard, which must not be empty.
func CopySelection(t testing.TB, w string) string {
	t.Helper()
	Focus(t, w)
	got := Copy(t, func(s string) bool { return s != "" })
	if got == "" {
		t.Fatal("nothing was copied")
	}
	return got
}
