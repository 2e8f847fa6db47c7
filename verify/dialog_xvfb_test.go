package verify

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/xtest"
)

// These tests put real zenity dialogs on a private Xvfb display and answer
// them with xdotool, as a human would with a keyboard (see internal/xtest).

func askAsync(d *DialogChannel, r Request, timeout time.Duration) <-chan Answer {
	out := make(chan Answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		a, err := d.Ask(ctx, r)
		if err != nil {
			a = "error: " + Answer(err.Error())
		}
		out <- a
	}()
	return out
}

func wait(t *testing.T, ch <-chan Answer) Answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(60 * time.Second):
		t.Fatal("the dialog did not return")
		return ""
	}
}

func TestDialogQuestion(t *testing.T) {
	xtest.Require(t)
	xtest.StartXvfb(t)
	d := NewDialog()
	r := Request{Kind: KindConfirmation, Agent: "claude-desktop", Operation: "fs_delete_file",
		Action: `fs.delete_file {"path":"/srv/data/report.csv"}`, Reason: "matches requires_approval \"fs.delete_*\"",
		Arguments: map[string]any{"path": "/srv/data/report.csv"}, ExpiresAt: time.Now().Add(5 * time.Minute)}

	t.Run("text, then Deny", func(t *testing.T) {
		answer := askAsync(d, r, time.Minute)
		w := xtest.Window(t, "aqlguard: allow this action?")
		xtest.Do(t, "key", "--window", w, "Tab") // focus the (selectable) text
		text := xtest.CopySelection(t, w)
		for _, want := range []string{"Agent: claude-desktop", "Operation: fs_delete_file", `"path": "/srv/data/report.csv"`, "requires_approval"} {
			if !strings.Contains(text, want) {
				t.Errorf("dialog text lacks %q:\n%s", want, text)
			}
		}
		xtest.Window(t, "aqlguard: allow this action?")
		xtest.Do(t, "key", "Escape") // to the focused dialog
		if a := wait(t, answer); a != Deny {
			t.Errorf("answer %q, want deny", a)
		}
	})
	t.Run("Allow once", func(t *testing.T) {
		answer := askAsync(d, r, time.Minute)
		w := xtest.Window(t, "aqlguard: allow this action?")
		xtest.Do(t, "key", "--window", w, "Return") // the default button
		if a := wait(t, answer); a != Allow {
			t.Errorf("answer %q, want allow", a)
		}
	})
	t.Run("nobody answers", func(t *testing.T) {
		answer := askAsync(d, r, 3*time.Second)
		xtest.Window(t, "aqlguard: allow this action?")
		if a := wait(t, answer); a != None {
			t.Errorf("answer %q, want none", a)
		}
		time.Sleep(500 * time.Millisecond)
		if out, _ := exec.Command("xdotool", "search", "--name", "^aqlguard: allow this action\\?$").Output(); len(strings.TrimSpace(string(out))) > 0 {
			t.Error("the dialog stayed up after the wait ended")
		}
	})
}

func TestDialogShowsCopyableCode(t *testing.T) {
	xtest.Require(t)
	xtest.StartXvfb(t)
	ch, code, err := NewChallenge("claude-desktop", "fs.delete_file", "danger_zone", time.Now(), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done <- NewDialog().Show(ctx, Request{Kind: KindChallenge, Agent: "claude-desktop", Action: "fs.delete_file",
			Challenge: ch.ID, Code: code, Tier: "danger_zone", ExpiresAt: ch.ExpiresAt})
	}()
	w := xtest.Window(t, "aqlguard: verification code")
	copied := strings.TrimSpace(xtest.CopySelection(t, w))
	if copied != code {
		t.Errorf("copied %q, want the code", copied)
	}
	if err := ch.Check(copied, time.Now()); err != nil {
		t.Errorf("the copied code does not verify: %v", err)
	}
	xtest.Do(t, "key", "--window", w, "Return")
	if err := <-done; err != nil {
		t.Errorf("Show: %v", err)
	}
}

func TestDialogWithoutDisplayFailsClosed(t *testing.T) {
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	d := NewDialog()
	if a, err := d.Ask(context.Background(), Request{}); a != None || err != ErrNoDisplay {
		t.Errorf("Ask = %q, %v", a, err)
	}
	if err := d.Show(context.Background(), Request{Code: "SECRET"}); err != ErrNoDisplay {
		t.Errorf("Show = %v", err)
	}
}
