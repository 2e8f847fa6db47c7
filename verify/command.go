package verify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// CommandChannel runs a configured program once per request and writes
// one JSON object to its stdin (DESIGN.md's contract). For a confirmation
// the program answers `allow` or `deny` on the first line of stdout;
// anything else, or nothing in time, is not an approval.
type CommandChannel struct {
	Argv []string
	// Stderr receives the program's stderr (default: discarded).
	Stderr io.Writer
}

// NewCommand returns a channel that runs argv.
func NewCommand(argv []string) *CommandChannel { return &CommandChannel{Argv: argv} }

// Name implements Channel.
func (c *CommandChannel) Name() string { return "command" }

type commandRequest struct {
	Kind        Kind   `json:"kind"`
	Token       string `json:"token,omitempty"`
	ChallengeID string `json:"challenge_id,omitempty"`
	Code        string `json:"code,omitempty"`
	Agent       string `json:"agent"`
	Operation   string `json:"operation,omitempty"`
	Action      string `json:"action"`
	Tier        string `json:"tier,omitempty"`
	ExpiresAt   string `json:"expires_at"`
}

// Ask implements Channel.
func (c *CommandChannel) Ask(ctx context.Context, r Request) (Answer, error) {
	out, err := c.run(ctx, commandRequest{Kind: KindConfirmation, Token: r.Token, Agent: r.Agent,
		Operation: r.Operation, Action: r.Action, ExpiresAt: r.ExpiresAt.UTC().Format(time.RFC3339)})
	if ctx.Err() != nil {
		return None, nil
	}
	if err != nil {
		return None, err
	}
	line, _, _ := strings.Cut(string(out), "\n")
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "allow":
		return Allow, nil
	case "deny":
		return Deny, nil
	}
	return None, nil
}

// Show implements Channel. The code is written to the program's stdin
// and nowhere else; errors never carry it.
func (c *CommandChannel) Show(ctx context.Context, r Request) error {
	_, err := c.run(ctx, commandRequest{Kind: KindChallenge, ChallengeID: r.Challenge, Code: r.Code, Agent: r.Agent,
		Action: r.Action, Tier: r.Tier, ExpiresAt: r.ExpiresAt.UTC().Format(time.RFC3339)})
	return err
}

func (c *CommandChannel) run(ctx context.Context, req commandRequest) ([]byte, error) {
	if len(c.Argv) == 0 {
		return nil, errors.New("command channel: no command configured")
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("command channel: encoding the request: %w", err)
	}
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Stdin = bytes.NewReader(body)
	var stdout bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &stdout, n: 4096}
	cmd.Stderr = c.Stderr
	// A child of the program may keep the pipes open after it is killed:
	// kill its whole process group, and stop waiting for the pipes soon.
	killGroup(cmd)
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil && ctx.Err() == nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return stdout.Bytes(), fmt.Errorf("command channel: %s exited with status %d", c.Argv[0], exit.ExitCode())
		}
		return nil, fmt.Errorf("command channel: running %s: %w", c.Argv[0], err)
	}
	return firstLine(stdout.Bytes()), nil
}

func firstLine(b []byte) []byte {
	sc := bufio.NewScanner(bytes.NewReader(b))
	if sc.Scan() {
		return sc.Bytes()
	}
	return nil
}

// limitedWriter keeps the first n bytes and drops the rest, so a chatty
// program cannot grow our memory.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.n -= k
		if _, err := l.w.Write(p[:k]); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
