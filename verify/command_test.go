package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/procfs"
)

// script writes a /bin/sh script standing in for a human: it saves its
// stdin to a file (cat ends only at EOF, so a saved stdin also proves that
// stdin was closed), then runs body. It returns argv and the stdin file.
func script(t *testing.T, body string) (argv []string, stdinFile string) {
	t.Helper()
	dir := t.TempDir()
	stdinFile = filepath.Join(dir, "stdin.json")
	path := filepath.Join(dir, "human.sh")
	src := "#!/bin/sh\ncat > " + strconv.Quote(stdinFile) + "\n" + body + "\n"
	if err := os.WriteFile(path, []byte(src), 0o700); err != nil {
		t.Fatal(err)
	}
	return []string{path}, stdinFile
}

// readStdin returns the one JSON object the program got, checking that it
// was exactly one line.
func readStdin(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the program saved no stdin (was it closed?): %v", err)
	}
	if bytes.Count(b, []byte("\n")) != 1 || !bytes.HasSuffix(b, []byte("\n")) {
		t.Errorf("stdin is not one line: %q", b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("stdin %q: %v", b, err)
	}
	return m
}

var confirmation = Request{Kind: KindConfirmation, Agent: "agent-a", Operation: "fs_delete_file",
	Action: `fs.delete_file {"path":"/srv/x"}`, Arguments: map[string]any{"path": "/srv/x"}, Reason: "requires approval",
	Token: "conf_123", Tier: "confirm", ExpiresAt: time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("CET", 3600)),
	Client: "claude-code", Server: "fs", Tool: "delete_file"}

func TestCommandAskAllowSession(t *testing.T) {
	argv, stdin := script(t, "echo ALLOW_SESSION")
	r := confirmation
	r.AllowSession = true
	got, err := NewCommand(argv).Ask(context.Background(), r)
	if err != nil || got != AllowSession {
		t.Errorf("Ask = %q, %v; want allow_session", got, err)
	}
	if m := readStdin(t, stdin); !reflect.DeepEqual(m["answers"], []any{"allow", "allow_session", "deny"}) {
		t.Errorf("answers offered: %v", m["answers"])
	}
}

func TestCommandAsk(t *testing.T) {
	tests := []struct {
		name, body string
		want       Answer
	}{
		{"allow", "echo allow", Allow},
		{"allow, any case and space", "printf '  ALLOW \\r\\n'", Allow},
		{"allow, then more lines", "echo allow; echo deny; yes | head -c 100000", Allow},
		{"deny", "echo deny", Deny},
		{"deny, failing", "echo Deny; exit 1", Deny},
		{"allow only on the second line", "echo; echo allow", None},
		{"garbage", "echo 'allow please'", None},
		{"allowed (not the word)", "echo allowed", None},
		{"nothing", "true", None},
		{"allow, then a failure", "echo allow; exit 3", None},
		{"killed by a signal", "echo allow; kill -9 $$", None},
		{"a megabyte of noise", "head -c 1000000 /dev/zero | tr '\\0' x", None},
		{"allow_session when not offered", "echo allow_session", None},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argv, stdin := script(t, tt.body)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			got, err := NewCommand(argv).Ask(ctx, confirmation)
			if err != nil || got != tt.want {
				t.Errorf("Ask = %q, %v; want %q", got, err, tt.want)
			}
			m := readStdin(t, stdin)
			want := map[string]any{"kind": "confirmation", "token": "conf_123", "agent": "agent-a",
				"operation": "fs_delete_file", "action": `fs.delete_file {"path":"/srv/x"}`,
				"expires_at": "2026-01-02T02:04:05Z", // RFC 3339, UTC, whole seconds
				"reason":     "requires approval", "tier": "confirm", "arguments": map[string]any{"path": "/srv/x"},
				"answers": []any{"allow", "deny"}, "client": "claude-code", "server": "fs", "tool": "delete_file",
				"steps": float64(0), "summary": `Claude Code wants to use delete_file on "/srv/x" (the fs server).`}
			if !reflect.DeepEqual(m, want) {
				t.Errorf("stdin\n got %v\nwant %v", m, want)
			}
		})
	}
}

// When the context ends first, the answer is None, Ask returns promptly,
// and the program and its children are gone (its process group is killed).
func TestCommandAskTimeout(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	argv, _ := script(t, "sleep 300 & echo $! > "+strconv.Quote(pidFile)+"; wait; echo allow")
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	began := time.Now()
	got, err := NewCommand(argv).Ask(ctx, confirmation)
	if got != None || err != nil {
		t.Errorf("Ask = %q, %v; want none, nil", got, err)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("Ask took %s: the program must die with the context", d)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	waitGone(t, pid)
}

// A program whose question ended is asked to stop (SIGTERM) and may
// clean up; one that ignores that is killed stopGrace later, with its
// children.
func TestCommandStopsGracefully(t *testing.T) {
	dir := t.TempDir()
	cleaned := filepath.Join(dir, "cleaned")
	argv, _ := script(t, "trap 'touch "+strconv.Quote(cleaned)+"; exit 0' TERM; sleep 300 & wait")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if got, err := NewCommand(argv).Ask(ctx, confirmation); got != None || err != nil {
		t.Errorf("Ask = %q, %v", got, err)
	}
	if _, err := os.Stat(cleaned); err != nil {
		t.Errorf("the program did not get to clean up: %v", err)
	}

	pidFile := filepath.Join(dir, "stubborn.pid")
	argv, _ = script(t, "trap '' TERM; echo $$ > "+strconv.Quote(pidFile)+"; while :; do sleep 0.1; done")
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	began := time.Now()
	if got, err := NewCommand(argv).Ask(ctx2, confirmation); got != None || err != nil {
		t.Errorf("Ask = %q, %v", got, err)
	}
	if d := time.Since(began); d > time.Second+stopGrace+5*time.Second {
		t.Errorf("Ask took %s with a program that ignores SIGTERM", d)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	waitGone(t, pid)
}

// waitGone waits until pid has exited (a zombie counts as gone: it is
// waiting for a reaper that a container may not have).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := procfs.Read(pid)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || syscall.Kill(pid, 0) == syscall.ESRCH {
				return
			}
		} else if st.State == 'Z' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still running", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestCommandAskContextAlreadyDone(t *testing.T) {
	argv, stdin := script(t, "echo allow")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, err := NewCommand(argv).Ask(ctx, confirmation); got != None || err != nil {
		t.Errorf("Ask = %q, %v", got, err)
	}
	if _, err := os.Stat(stdin); err == nil {
		t.Error("the program ran although there was no time left")
	}
}

func TestCommandErrors(t *testing.T) {
	ctx := context.Background()
	for name, c := range map[string]*CommandChannel{
		"missing program": NewCommand([]string{filepath.Join(t.TempDir(), "no-such-pager")}),
		"no argv":         NewCommand(nil),
		"empty program":   NewCommand([]string{""}),
	} {
		if a, err := c.Ask(ctx, confirmation); err == nil || a != None {
			t.Errorf("%s: Ask = %q, %v; want none and an error", name, a, err)
		}
		err := c.Show(ctx, Request{Kind: KindChallenge, Code: "SECRET-CODE-1234"})
		if err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: Show = %v; want an error without the code", name, err)
		}
	}
	argv, _ := script(t, "echo allow")
	if a, err := NewCommand(argv).Ask(ctx, Request{Kind: KindChallenge}); err == nil || a != None {
		t.Errorf("Ask with a challenge: %q, %v", a, err)
	}
	if err := NewCommand(argv).Show(ctx, Request{Kind: KindConfirmation, Code: "SECRET"}); err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("Show with a confirmation: %v", err)
	}
	if err := NewCommand(argv).Show(ctx, Request{Kind: KindChallenge}); err == nil {
		t.Error("Show without a code must fail")
	}
}

// The program's stderr goes to Stderr, never into the answer.
func TestCommandStderr(t *testing.T) {
	argv, _ := script(t, "echo 'deny from stderr' >&2; echo allow")
	var stderr bytes.Buffer
	c := NewCommand(argv)
	c.Stderr = &stderr
	if a, err := c.Ask(context.Background(), confirmation); a != Allow || err != nil {
		t.Errorf("Ask = %q, %v", a, err)
	}
	if stderr.String() != "deny from stderr\n" {
		t.Errorf("stderr %q", stderr.String())
	}
}

// NewCommand copies argv: the caller's slice can change afterwards.
func TestNewCommandCopiesArgv(t *testing.T) {
	argv, _ := script(t, "echo allow")
	c := NewCommand(argv)
	argv[0] = "/nonexistent"
	if a, err := c.Ask(context.Background(), confirmation); a != Allow || err != nil {
		t.Errorf("Ask = %q, %v", a, err)
	}
}

func TestCommandShow(t *testing.T) {
	const code = "7K3M-0QZ8-ABCD-EFGH-JKMNP-QRST0"
	req := Request{Kind: KindChallenge, Agent: "agent-a", Operation: "fs_delete_file", Action: "fs.delete_file",
		Challenge: "123e4567-e89b-42d3-a456-426614174000", Code: code, Tier: "danger_zone",
		ExpiresAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Reason: "deny pattern"}

	argv, stdin := script(t, "exit 0")
	if err := NewCommand(argv).Show(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"kind": "challenge", "challenge_id": req.Challenge, "code": code, "agent": "agent-a",
		"action": "fs.delete_file", "tier": "danger_zone", "expires_at": "2026-01-02T03:04:05Z",
		"reason": "deny pattern", "client": "", "summary": ""}
	if m := readStdin(t, stdin); !reflect.DeepEqual(m, want) {
		t.Errorf("stdin\n got %v\nwant %v", m, want)
	}

	// A program that cannot deliver the code is an error, and no error
	// carries the code, not even from a program that prints it.
	for name, body := range map[string]string{
		"failing":          "cat >&2; echo '" + code + "'; exit 4",
		"too slow":         "sleep 300",
		"killed by signal": "kill -9 $$",
	} {
		t.Run(name, func(t *testing.T) {
			argv, _ := script(t, body)
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			err := NewCommand(argv).Show(ctx, req)
			if err == nil {
				t.Fatal("no error")
			}
			for _, secret := range []string{code, NormalizeCode(code), "7K3M"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error carries the code: %v", err)
				}
			}
		})
	}
}

// A program that echoes what it is given writes the code to its stderr;
// what reaches Stderr has "[code]" instead, however the program cuts its
// writes, and however it ends.
func TestCommandShowRedactsStderr(t *testing.T) {
	const code = "7K3M-0QZ8-ABCD-EFGH-JKMNP-QRST0"
	req := Request{Kind: KindChallenge, Agent: "agent-a", Action: "fs.delete_file",
		Challenge: "123e4567-e89b-42d3-a456-426614174000", Code: code, Tier: "danger_zone",
		ExpiresAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	tests := []struct {
		name, body, want string
		wantErr          bool
	}{
		{name: "echoes its stdin", body: `cat "$1" >&2`,
			want: `{"kind":"challenge","challenge_id":"123e4567-e89b-42d3-a456-426614174000","code":"[code]",` +
				`"agent":"agent-a","action":"fs.delete_file","tier":"danger_zone","expires_at":"2026-01-02T03:04:05Z",` +
				`"reason":"","client":"","summary":""}` + "\n"},
		{name: "without hyphens", body: "echo 'typed 7K3M0QZ8ABCDEFGHJKMNPQRST0' >&2", want: "typed [code]\n"},
		{name: "split across writes", body: "printf 'a 7K3M-0QZ8-AB' >&2; sleep 0.3; printf 'CD-EFGH-JKMNP-QRST0 b\\nc ' >&2; sleep 0.3; printf '" + code + "' >&2",
			want: "a [code] b\nc [code]"},
		{name: "failing", body: `cat "$1" >&2; exit 3`, wantErr: true},
		{name: "killed mid-line", body: "printf 'so far " + code + "' >&2; sleep 300", want: "so far [code]", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argv, stdin := script(t, tt.body)
			argv = append(argv, stdin)
			var stderr bytes.Buffer
			c := NewCommand(argv)
			c.Stderr = &stderr
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if err := c.Show(ctx, req); (err != nil) != tt.wantErr {
				t.Errorf("Show = %v", err)
			}
			got := stderr.String()
			for _, secret := range []string{code, NormalizeCode(code), "7K3M"} {
				if strings.Contains(got, secret) {
					t.Errorf("stderr carries the code: %q", got)
				}
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("stderr\n got %q\nwant %q", got, tt.want)
			}
			if !strings.Contains(got, "[code]") {
				t.Errorf("stderr %q: the code was not replaced but lost", got)
			}
		})
	}
}
