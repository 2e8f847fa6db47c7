//go:build !darwin && !windows

package verify

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The code reaches the dialog program on its stdin, inside the rendered
// text, and nowhere else: not in its arguments, not in its environment
// (both readable by every process on the machine), not in an error, even
// from a program that echoes its stdin. Done and Close (exit 0 and 1)
// and the context's end are not errors; anything else is.
func TestDialogShowCodeOnlyOnStdin(t *testing.T) {
	tests := []struct {
		mode    string
		timeout time.Duration // 0: none
		wantErr bool
	}{
		{"deny", 0, false},               // Close (OK)
		{"cancel", 0, false},             // Copy and close, or Escape: copies (no clipboard tool: an error)
		{"fail", 0, true},                // could not be put up
		{"nodisplay", 0, true},           // exits as Cancel, but was never on screen
		{"hang", 2 * time.Second, false}, // on screen until the time ran out
	}
	secrets := []string{challengeReq.Code, NormalizeCode(challengeReq.Code), "7K3M"}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			fake := newFakeZenity(t, tt.mode)
			d := fakeDialog(t, fake)
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			err := d.Show(ctx, challengeReq)
			if tt.mode == "nodisplay" && err != nil && strings.Contains(err.Error(), "was shown") {
				t.Errorf("Show claims the code was shown: %v", err)
			}
			if tt.mode == "cancel" && err != nil && strings.Contains(err.Error(), "clipboard") {
				err = nil // no xclip on this machine: the code was shown all the same
			}
			if (err != nil) != tt.wantErr {
				t.Errorf("Show = %v, want an error: %v", err, tt.wantErr)
			}
			if err != nil {
				for _, secret := range secrets {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("the error carries the code: %v", err)
					}
				}
			}

			want := []string{"--text-info", "--title=" + CodeTitle, "--width=720", "--height=520",
				"--ok-label=Close", "--cancel-label=Copy the code and close"}
			if got := fake.argv(t); !slices.Equal(got, want) {
				t.Errorf("argv\n got %q\nwant %q", got, want)
			}
			env, err := os.ReadFile(fake.env)
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range secrets {
				if strings.Contains(string(env), secret) {
					t.Errorf("the environment carries the code:\n%s", env)
				}
			}
			stdin, err := os.ReadFile(fake.stdin)
			if err != nil {
				t.Fatal(err)
			}
			if want := codeText(challengeReq, renderNow, challengeReq.Code); string(stdin) != want {
				t.Errorf("stdin\n got %q\nwant %q", stdin, want)
			}

			if tt.timeout > 0 {
				b, _ := os.ReadFile(fake.pid)
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				waitGone(t, pid)
			}
		})
	}
}

func TestDialogShowContextAlreadyDone(t *testing.T) {
	fake := newFakeZenity(t, "deny")
	d := fakeDialog(t, fake)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Show(ctx, challengeReq); err == nil {
		t.Error("Show with no time left did not fail")
	}
	if args := fake.argv(t); args != nil {
		t.Errorf("a dialog program ran: %q", args)
	}
}

// The program is zenity, else matedialog (the same program under another
// name), and never qarma, which may take the text for rich text.
func TestDialogProgramChoice(t *testing.T) {
	tests := []struct {
		name      string
		installed []string
		want      string // "": none
	}{
		{"all three", []string{"zenity", "matedialog", "qarma"}, "zenity"},
		{"no zenity", []string{"matedialog", "qarma"}, "matedialog"},
		{"only qarma", []string{"qarma"}, ""},
		{"none", nil, ""},
	}
	old := systemDirs
	t.Cleanup(func() { systemDirs = old })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, name := range tt.installed {
				if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			systemDirs = []string{dir}
			got, err := findSystemProgram(dialogPrograms...)
			if tt.want == "" {
				if err == nil {
					t.Errorf("chose %s", got)
				}
				return
			}
			if err != nil || filepath.Base(got) != tt.want {
				t.Errorf("chose %q, %v; want %s", got, err, tt.want)
			}
		})
	}
}
