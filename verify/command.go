package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/internal/owned"
)

// waitDelay bounds how long a finished or killed command may keep its
// stdout and stderr open through a child that outlived it.
const waitDelay = time.Second

// stopGrace is how long a command whose request ended has, after
// SIGTERM, to clean up before it is killed.
const stopGrace = 2 * time.Second

// maxStdout is how much of a command's stdout is kept: the answer is one
// word on the first line, and a chatty program must not grow our memory.
const maxStdout = 4096

// CommandChannel reaches the human through a configured program, as
// DESIGN.md's [verify] channel = "command" contract says: the program is
// run once per request (argv as it is, no shell) and gets one JSON object
// on its stdin, which is then closed.
//
//	confirmation: {"kind":"confirmation","token","agent","operation","action","expires_at",
//	               "reason","tier","arguments","answers","client","server","tool","steps",
//	               "summary", "detail" (only for operation "tool change": the diff)}
//	challenge:    {"kind":"challenge","challenge_id","code","agent","action","tier","expires_at",
//	               "reason","client","summary"}
//
// summary is the request in one plain sentence, as a dialog's first line
// says it ("" for a check-in).
//
// expires_at is RFC 3339 in UTC. For a confirmation the program answers on
// the first line of its stdout: one of "answers", i.e. "allow", "deny",
// and, when offered, "allow_session" (case and surrounding space do not
// matter). arguments are the call's, secrets replaced by digests. Anything else, nothing, a non-zero exit with
// "allow", or no answer before the context ends, is not an approval.
//
// When the context ends the program's whole process group is killed (on
// Unix the program runs in a process group of its own, so a script's
// children go with it; it is therefore not in the terminal's foreground
// group and must not read the terminal). It is safe for concurrent use.
type CommandChannel struct {
	Argv []string
	// Stderr receives the program's stderr; nil discards it. It never goes
	// to aqlguard's own stdout (the MCP stream). While a program shows a
	// code, the code in what it writes here, as shown or without hyphens,
	// is replaced with "[code]", and lines are passed on whole (the rest
	// when the program ends): a program that echoes its stdin would
	// otherwise put the code into aqlguard's log. Other spellings of it
	// are not caught, so point Stderr only at a log the model cannot
	// read. Concurrent requests write to it concurrently.
	Stderr io.Writer
}

// NewCommand returns a channel that runs argv (copied).
func NewCommand(argv []string) *CommandChannel {
	return &CommandChannel{Argv: append([]string(nil), argv...)}
}

// Name implements Channel.
func (c *CommandChannel) Name() string { return "command" }

// confirmationStdin and challengeStdin are the two stdin objects, with
// every field of the contract always present.
type confirmationStdin struct {
	Kind      Kind           `json:"kind"`
	Token     string         `json:"token"`
	Agent     string         `json:"agent"`
	Operation string         `json:"operation"`
	Action    string         `json:"action"`
	ExpiresAt string         `json:"expires_at"`
	Reason    string         `json:"reason"`
	Tier      string         `json:"tier"`
	Arguments map[string]any `json:"arguments"`
	// Answers are the answers the program may give.
	Answers []Answer `json:"answers"`
	Client  string   `json:"client"`
	Server  string   `json:"server"`
	Tool    string   `json:"tool"`
	// Steps is, for a step-limit check-in, how many calls an approval
	// grants; 0 otherwise.
	Steps int `json:"steps"`
	// Summary is the request in one plain sentence (Request.Summary).
	Summary string `json:"summary"`
	// Detail is the diff of a changed tool (operation "tool change"),
	// or a new server's tools (operation "tool review").
	Detail string `json:"detail,omitempty"`
	// Does is what the tool does, as the guard believes it.
	Does string `json:"does,omitempty"`
}

type challengeStdin struct {
	Kind        Kind   `json:"kind"`
	ChallengeID string `json:"challenge_id"`
	Code        string `json:"code"`
	Agent       string `json:"agent"`
	Action      string `json:"action"`
	Tier        string `json:"tier"`
	ExpiresAt   string `json:"expires_at"`
	Reason      string `json:"reason"`
	Client      string `json:"client"`
	Summary     string `json:"summary"`
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Ask implements Channel: Allow, Deny or None from the program's first
// line of stdout. The error is for a program that could not be run at all.
func (c *CommandChannel) Ask(ctx context.Context, r Request) (Answer, error) {
	if r.Kind != KindConfirmation {
		return None, fmt.Errorf("command channel: Ask needs a confirmation request, got kind %q", r.Kind)
	}
	in := confirmationStdin{Kind: KindConfirmation, Token: r.Token, Agent: r.Agent, Operation: r.Operation,
		Action: r.Action, ExpiresAt: rfc3339(r.ExpiresAt), Reason: r.Reason, Tier: r.Tier, Arguments: r.Arguments,
		Answers: []Answer{Allow, Deny}, Client: r.Client, Server: r.Server, Tool: r.Tool, Steps: r.Steps, Detail: r.Detail,
		Summary: r.Summary(), Does: r.Does}
	if in.Arguments == nil {
		in.Arguments = map[string]any{}
	}
	switch {
	case r.AllowSession:
		in.Answers = []Answer{Allow, AllowSession, Deny}
	case r.Forget:
		in.Answers = []Answer{Allow, AllowForget, Deny}
	}
	body, err := json.Marshal(in)
	if err != nil {
		return None, fmt.Errorf("command channel: encoding the request: %w", err)
	}
	res, err := c.run(ctx, body, c.Stderr)
	if err != nil {
		return None, err
	}
	if res.timedOut {
		return None, nil
	}
	line, _, _ := strings.Cut(string(res.stdout), "\n")
	switch answer := Answer(strings.ToLower(strings.TrimSpace(line))); answer {
	case Allow, AllowSession, AllowForget:
		if answer == AllowSession && !r.AllowSession || answer == AllowForget && !r.Forget {
			return None, nil // not offered: not an answer
		}
		if res.exit == 0 {
			return answer, nil
		}
		// A program that says allow and then fails approves nothing.
		return None, nil
	case Deny:
		return Deny, nil
	}
	return None, nil
}

// Show implements Channel: the code goes to the program's stdin and
// nowhere else. It returns an error when the program cannot be run,
// exits non-zero, or is still running when ctx ends: then the code may
// not have reached anyone. No error carries the code.
func (c *CommandChannel) Show(ctx context.Context, r Request) error {
	if r.Kind != KindChallenge {
		return fmt.Errorf("command channel: Show needs a challenge request, got kind %q", r.Kind)
	}
	if r.Code == "" {
		return errors.New("command channel: the challenge request has no code to show")
	}
	body, err := json.Marshal(challengeStdin{KindChallenge, r.Challenge, r.Code, r.Agent, r.Action, r.Tier, rfc3339(r.ExpiresAt),
		r.Reason, r.Client, r.Summary()})
	if err != nil {
		return errors.New("command channel: encoding the request failed") // the error could quote the body
	}
	var stderr io.Writer // nil: the null device
	if c.Stderr != nil {
		w := &redactWriter{w: c.Stderr, code: r.Code}
		// run returns only once the program's stderr is drained: what
		// Close passes on is the end of it.
		defer w.Close()
		stderr = w
	}
	res, err := c.run(ctx, body, stderr)
	switch {
	case err != nil:
		return err
	case res.timedOut:
		return fmt.Errorf("command channel: %s did not finish before the deadline and was killed: %w", c.Argv[0], ctx.Err())
	case res.exit != 0:
		return fmt.Errorf("command channel: %s exited with status %d", c.Argv[0], res.exit)
	}
	return nil
}

type result struct {
	stdout   []byte
	exit     int  // exit status; -1 when killed by a signal
	timedOut bool // ctx ended before the program did
}

// run runs the program with body on its stdin and stderr as its stderr.
// Its error is only for a program that cannot be started (or waited
// for); exit statuses and time outs are in the result. Errors name the
// program, never the body.
func (c *CommandChannel) run(ctx context.Context, body []byte, stderr io.Writer) (result, error) {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return result{}, errors.New("command channel: no command configured")
	}
	if ctx.Err() != nil {
		return result{timedOut: true}, nil
	}
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	// os/exec writes the body from a goroutine and then closes the pipe, so
	// the program sees EOF; a program that exits without reading is fine
	// (exec ignores EPIPE on stdin).
	cmd.Stdin = bytes.NewReader(append(body, '\n'))
	var stdout bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &stdout, n: maxStdout}
	cmd.Stderr = stderr
	killGroup(cmd)
	cmd.WaitDelay = stopGrace
	// In a process group of its own, so the serving aqlguard's collector
	// of adopted processes must know it is ours (internal/owned).
	if err := owned.Start(cmd); err != nil {
		return result{}, fmt.Errorf("command channel: cannot start %s: %w", c.Argv[0], err)
	}
	err := owned.Wait(cmd)
	if ctx.Err() != nil {
		endGroup(cmd)
		return result{timedOut: true}, nil
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
	case errors.Is(err, exec.ErrWaitDelay):
		// The program exited but a child of it kept stdout open; its exit
		// status and what it wrote still stand.
	default:
		return result{}, fmt.Errorf("command channel: running %s: %w", c.Argv[0], err)
	}
	return result{stdout: stdout.Bytes(), exit: cmd.ProcessState.ExitCode()}, nil
}

// limitedWriter keeps the first n bytes and drops the rest, still
// reporting success so that the program is not killed by EPIPE.
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
