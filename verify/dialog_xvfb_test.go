package verify

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/xtest"
)

// These tests put real zenity dialogs on a private Xvfb display and
// answer them with xdotool, as a human would with the keyboard. They skip
// loudly when Xvfb, zenity, xdotool or xclip is missing, and fail instead
// when AQLGUARD_REQUIRE_X=1 (.ci/run sets it after installing them).
//
// How the text is checked: the question dialog's label is selectable
// (GTK), so Tab moves the focus onto it, ctrl+a selects all of it and
// ctrl+c copies it to the CLIPBOARD selection, which xclip reads back.
// That is the exact text GTK shows, compared with questionText byte for
// byte; no OCR. The focus cycle of the dialog is Deny → Allow once (the
// default, focused at first) → text → Deny, so Tab reaches the text at
// once, and shift+Tab from the text goes back to Allow once.
//
// Every step is bounded: window search and clipboard reads are polled
// with deadlines, each xdotool/xclip call has its own timeout, and each
// dialog runs under a context; generous limits keep a loaded 2-core
// machine from failing them.

const (
	xStep    = 20 * time.Second // one xdotool or xclip call
	xAppear  = 60 * time.Second // a dialog's window to appear
	xAnswer  = 60 * time.Second // Ask or Show to return after the keys
	xCopyTry = 3 * time.Second  // clipboard polling after one ctrl+c
)

// startX starts a private display for this test (DISPLAY is set for the
// test and every process it starts, zenity included).
func startX(t *testing.T) {
	t.Helper()
	xtest.Require(t)
	xtest.StartXvfb(t)
	// No accessibility bus to look for, and X11 even where Wayland is
	// around: one less thing to wait for or to go wrong under load.
	t.Setenv("NO_AT_BRIDGE", "1")
	t.Setenv("GDK_BACKEND", "x11")
}

// run runs an X tool with a timeout and returns its trimmed stdout.
func run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), xStep)
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

// window waits for a mapped window titled exactly title, checks the
// title with getwindowname, focuses it and returns its id.
func window(t *testing.T, title string) string {
	t.Helper()
	deadline := time.Now().Add(xAppear)
	pattern := "^" + regexp.QuoteMeta(title) + "$"
	for {
		out, _ := run("xdotool", "search", "--onlyvisible", "--name", pattern)
		if ids := strings.Fields(out); len(ids) > 0 {
			w := ids[0]
			name, err := run("xdotool", "getwindowname", w)
			if err != nil {
				t.Fatal(err)
			}
			if name != title {
				t.Fatalf("window %s is titled %q, want %q", w, name, title)
			}
			focus(t, w)
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("no window titled %q appeared within %s", title, xAppear)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// focus gives w the keyboard focus (there is no window manager to do it)
// and waits until X says it has it.
func focus(t *testing.T, w string) {
	t.Helper()
	deadline := time.Now().Add(xStep)
	for {
		_, err := run("xdotool", "windowfocus", "--sync", w)
		if got, _ := run("xdotool", "getwindowfocus"); err == nil && got == w {
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

// keys types into the focused window (XTEST, as a keyboard would).
func keys(t *testing.T, k ...string) {
	t.Helper()
	if _, err := run("xdotool", append([]string{"key", "--clearmodifiers", "--delay", "60"}, k...)...); err != nil {
		t.Fatal(err)
	}
}

// copyText presses pre, then ctrl+a ctrl+c, and polls the clipboard until
// it holds want; it tries again (pre moves the focus on) a few times and
// returns the last clipboard content it saw.
func copyText(t *testing.T, want string, pre ...string) string {
	t.Helper()
	var got string
	for try := 0; try < 6; try++ {
		keys(t, append(pre, "ctrl+a", "ctrl+c")...)
		for end := time.Now().Add(xCopyTry); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if s, err := run("xclip", "-o", "-selection", "clipboard"); err == nil {
				got = s
				if got == strings.TrimSpace(want) {
					return got
				}
			}
		}
	}
	return got
}

// dialogPIDs lists the running dialog processes whose command line
// contains marker.
func dialogPIDs(marker string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		cmdline, err := os.ReadFile(dir + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(marker)) {
			continue
		}
		argv0, _, _ := bytes.Cut(cmdline, []byte{0})
		switch filepath.Base(string(argv0)) {
		case "zenity", "qarma", "matedialog":
			pid, _ := strconv.Atoi(filepath.Base(dir))
			pids = append(pids, pid)
		}
	}
	return pids
}

type asked struct {
	answer Answer
	err    error
	took   time.Duration
}

// askAsync runs Ask in the background under a context of timeout.
func askAsync(d *DialogChannel, r Request, timeout time.Duration) <-chan asked {
	out := make(chan asked, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		began := time.Now()
		a, err := d.Ask(ctx, r)
		out <- asked{a, err, time.Since(began)}
	}()
	return out
}

func await[T any](t *testing.T, ch <-chan T, limit time.Duration) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(limit):
		t.Fatalf("the dialog call did not return within %s", limit)
		var zero T
		return zero
	}
}

// xRequest is a confirmation with a unique agent name, so that its dialog
// process can be told apart from any other.
func xRequest(t *testing.T, now time.Time) Request {
	return Request{Kind: KindConfirmation, Agent: fmt.Sprintf("agent-%d", time.Now().UnixNano()),
		Operation: "fs_delete_file", Action: `fs.delete_file {"path":"/srv/data/report_2026.csv"}`,
		Reason: `matches requires_approval "fs.delete_*" & <risk> 40`,
		Arguments: map[string]any{"path": "/srv/data/report_2026.csv", "options": map[string]any{
			"recursive": false, "note": "naïve café ✓ \\ back\\slash"}},
		Token: "conf_x", Tier: "confirm", ExpiresAt: now.Add(5 * time.Minute)}
}

func xDialog() (*DialogChannel, time.Time) {
	now := time.Now().Truncate(time.Second)
	return &DialogChannel{now: func() time.Time { return now }}, now
}

// (a) The question has the right title and exactly the rendered text, and
// pressing "Allow once" allows.
func TestXDialogAskShowsTheActionAndAllows(t *testing.T) {
	startX(t)
	d, now := xDialog()
	r := xRequest(t, now)
	want, err := questionText(r, now)
	if err != nil {
		t.Fatal(err)
	}
	res := askAsync(d, r, 3*time.Minute)
	window(t, QuestionTitle)
	if got := copyText(t, want, "Tab"); got != want {
		t.Fatalf("the dialog's text\n got %q\nwant %q", got, want)
	}
	keys(t, "shift+Tab", "Return") // from the text back to "Allow once", press it
	if got := await(t, res, xAnswer); got.answer != Allow || got.err != nil {
		t.Errorf("Ask = %q, %v; want allow", got.answer, got.err)
	}
}

// Return on a fresh question presses the default button, "Allow once".
func TestXDialogAskReturnIsAllowOnce(t *testing.T) {
	startX(t)
	d, now := xDialog()
	res := askAsync(d, xRequest(t, now), 3*time.Minute)
	window(t, QuestionTitle)
	keys(t, "Return")
	if got := await(t, res, xAnswer); got.answer != Allow || got.err != nil {
		t.Errorf("Ask = %q, %v; want allow", got.answer, got.err)
	}
}

// (b) Escape, and the Deny button, deny.
func TestXDialogAskDeny(t *testing.T) {
	startX(t)
	d, now := xDialog()
	for name, k := range map[string][]string{
		"Escape":      {"Escape"},
		"Deny button": {"shift+Tab", "Return"}, // from "Allow once" to "Deny"
	} {
		t.Run(name, func(t *testing.T) {
			res := askAsync(d, xRequest(t, now), 3*time.Minute)
			window(t, QuestionTitle)
			keys(t, k...)
			if got := await(t, res, xAnswer); got.answer != Deny || got.err != nil {
				t.Errorf("Ask = %q, %v; want deny", got.answer, got.err)
			}
		})
	}
}

// (c) Nobody answers: when the context times out Ask returns None, the
// dialog process is gone and so is its window.
func TestXDialogAskTimeout(t *testing.T) {
	startX(t)
	d, now := xDialog()
	r := xRequest(t, now)
	const timeout = 8 * time.Second
	res := askAsync(d, r, timeout)
	window(t, QuestionTitle)
	pids := dialogPIDs(r.Agent)
	if len(pids) != 1 {
		t.Fatalf("dialog processes for this question: %v, want one", pids)
	}
	got := await(t, res, timeout+xAnswer)
	if got.answer != None || got.err != nil {
		t.Errorf("Ask = %q, %v; want none", got.answer, got.err)
	}
	if got.took < timeout-time.Second {
		t.Errorf("Ask returned after %s, before its %s timeout", got.took, timeout)
	}
	waitGone(t, pids[0])
	if left := dialogPIDs(r.Agent); len(left) > 0 {
		t.Errorf("dialog processes left: %v", left)
	}
	if out, _ := run("xdotool", "search", "--name", "^"+regexp.QuoteMeta(QuestionTitle)+"$"); out != "" {
		t.Errorf("the question window is still there: %s", out)
	}
}

// (d) The code dialog shows the code in a field it can be copied from:
// ctrl+a ctrl+c in the (focused, pre-selected) entry puts exactly the code
// on the clipboard, and the copied code verifies.
func TestXDialogShowCodeCanBeCopied(t *testing.T) {
	startX(t)
	d, now := xDialog()
	ch, code, err := NewChallenge("agent-x", "fs.delete_file", "danger_zone", now, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		done <- d.Show(ctx, Request{Kind: KindChallenge, Agent: "agent-x", Action: `fs.delete_file {"path":"C:\\x"}`,
			Challenge: ch.ID, Code: code, Tier: "danger_zone", ExpiresAt: ch.ExpiresAt})
	}()
	window(t, CodeTitle)
	copied := copyText(t, code)
	if copied != code {
		t.Fatalf("copied %q from the code dialog, want the code", copied)
	}
	if err := ch.Check(copied, now); err != nil {
		t.Errorf("the copied code does not verify: %v", err)
	}
	keys(t, "Return") // Done
	if err := await(t, done, xAnswer); err != nil {
		t.Errorf("Show = %v", err)
	}
}
