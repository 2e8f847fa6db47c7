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
		{"ok", 0, false},                 // Done
		{"cancel", 0, false},             // Close, Escape, the window closed
		{"fail", 0, true},                // could not be put up
		{"hang", 2 * time.Second, false}, // on screen until the time ran out
	}
	secrets := []string{challengeReq.Code, NormalizeCode(challengeReq.Code), "7K3M"}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			fake := installFakeZenity(t, tt.mode)
			d := fakeDialog(t)
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			err := d.Show(ctx, challengeReq)
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

			want := []string{"--text-info", "--title=" + CodeTitle, "--width=760", "--height=520",
				"--ok-label=Done", "--cancel-label=Close"}
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
	fake := installFakeZenity(t, "ok")
	d := fakeDialog(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Show(ctx, challengeReq); err == nil {
		t.Error("Show with no time left did not fail")
	}
	if args := fake.argv(t); args != nil {
		t.Errorf("a dialog program ran: %q", args)
	}
}

// Show runs zenity, else matedialog (the same program under another
// name), and never qarma, which may take the text for rich text.
func TestDialogShowProgram(t *testing.T) {
	tests := []struct {
		name      string
		installed []string
		want      string // "": Show fails
	}{
		{"all three", []string{"zenity", "matedialog", "qarma"}, "zenity"},
		{"no zenity", []string{"matedialog", "qarma"}, "matedialog"},
		{"only qarma", []string{"qarma"}, ""},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ran := filepath.Join(dir, "ran")
			for _, name := range tt.installed {
				src := "#!/bin/sh\necho " + name + " >> " + strconv.Quote(ran) + "\n"
				if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			d := fakeDialog(t)
			t.Setenv("PATH", dir)
			err := d.Show(context.Background(), challengeReq)
			b, _ := os.ReadFile(ran)
			got := strings.TrimSpace(string(b))
			if got != tt.want || (err != nil) != (tt.want == "") {
				t.Errorf("Show = %v, and %q ran; want %q", err, got, tt.want)
			}
			if err != nil && (!strings.Contains(err.Error(), "zenity") || strings.Contains(err.Error(), challengeReq.Code)) {
				t.Errorf("Show = %v", err)
			}
		})
	}
}
