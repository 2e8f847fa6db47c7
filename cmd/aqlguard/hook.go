package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/app"
	"github.com/aqlguard/aqlguard/clientconfig"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/hook"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy"
	"github.com/aqlguard/aqlguard/proxy/parking"
	"github.com/aqlguard/aqlguard/secrets"
	"github.com/aqlguard/aqlguard/verify"
)

// maxHookInput bounds what a hook reads on stdin: a Write of a large
// file is its whole content.
const maxHookInput = 16 << 20

// askMargin is what a hook keeps, of its time, for recording the
// answer of a human the guard asked and replying.
const askMargin = 5 * time.Second

// hookMemory is the heap a hook grows to before it collects garbage.
const hookMemory = 256 << 20

// hookMargin is how far below the client's own hook timeout aqlguard
// answers: a hook the client kills has said nothing, and some clients
// take that for a go-ahead.
const hookMargin = 10 * time.Second

// cmdHook is `aqlguard hook CLIENT`: one of the client's own tool calls,
// read from its hook input on stdin, judged by the guard (package hook),
// answered in the client's format on stdout. Every failure answers deny
// (exit 2, the reason on stderr), never allow.
func cmdHook(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// A verification code may be made here, or shown from here: no other
	// process of the user reads this one's memory.
	hardened := harden()
	if len(args) > 0 && args[0] == "show-code" {
		return cmdHookShowCode(args[1:], stdin, stderr, hardened)
	}
	// A hook lives for one decision: collecting garbage is time the
	// client waits for, for memory given back a moment later anyway. The
	// limit collects all the same should a call be unusually large.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(hookMemory)
	// The secret scanner the guard's audit record is redacted with
	// (gitleaks' ruleset read, its index's words; rules compile as the
	// arguments wake them) costs a hook about 2 ms (bench/RESULTS.md
	// (aw)): made beside reading the input, the configuration and the
	// state, not after them.
	go secrets.Default()
	var client string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		client, args = args[0], args[1:]
	}
	fs, g := newFlags("hook", stderr)
	// A client shows a hook's stderr to the user or the model: warnings
	// and errors only, unless asked.
	g.logLevel = "warn"
	fs.Lookup("log-level").DefValue = "warn"
	within := fs.Duration("within", 0, "answer within this time, well below the client's own hook timeout (default: the client's default timeout less 10s)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: aqlguard hook CLIENT [--agent AGENT] [--config FILE] [--state-dir DIR]   (CLIENT: %s)\n",
			strings.Join(hook.IDs(), ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return hook.BlockExit
	}
	if client == "" && fs.NArg() > 0 {
		client = fs.Arg(0)
	}
	deny := func(sentence string) int {
		fmt.Fprintln(stderr, sentence)
		return hook.BlockExit
	}
	c, ok := hook.Lookup(client)
	if !ok {
		return deny(fmt.Sprintf("aqlguard hook: %q is not a client aqlguard knows the hook format of (%s); the call is refused. "+
			"Fix the hook's command in the client's settings (aqlguard init writes it).", client, strings.Join(hook.IDs(), ", ")))
	}
	if *within <= 0 || *within > c.Timeout()-hookMargin {
		*within = c.Timeout() - hookMargin
	}
	deadline := time.Now().Add(*within)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	type decided struct {
		out  []byte
		code int
		why  string
	}
	done := make(chan decided, 1)
	go func() {
		out, code, why := decideHook(ctx, c, g, *within, hardened, stdin, stderr)
		done <- decided{out, code, why}
	}()
	select {
	case d := <-done:
		if d.why != "" {
			return deny(d.why)
		}
		if _, err := stdout.Write(d.out); err != nil {
			// An answer the client did not get must not read as "no
			// objection" (exit 0 with nothing said).
			return deny("aqlguard could not write its answer, so the call is refused.")
		}
		return d.code
	case <-ctx.Done():
		return deny("aqlguard could not decide this call in time, so it is refused; try again, and if it keeps happening the user should run `aqlguard doctor`.")
	}
}

// decideHook reads the input, judges it and renders the answer; why is
// the one sentence of a deny when nothing could be decided.
func decideHook(ctx context.Context, c hook.Client, g *globals, within time.Duration, hardened error, stdin io.Reader, stderr io.Writer) (out []byte, code int, why string) {
	raw, err := io.ReadAll(io.LimitReader(stdin, maxHookInput+1))
	switch {
	case err != nil:
		return nil, 0, "aqlguard could not read the hook's input, so the call is refused; try again."
	case len(raw) > maxHookInput:
		return nil, 0, fmt.Sprintf("aqlguard refuses a tool call of more than %d MiB; split it into smaller ones.", maxHookInput>>20)
	}
	e, err := c.Parse(raw)
	if err != nil {
		if errors.Is(err, hook.ErrUnknownEvent) {
			return nil, 0, "aqlguard does not judge this hook event (" + err.Error() + "), so it is refused; run the hook only for the events `aqlguard init` installs."
		}
		return nil, 0, "aqlguard could not read the hook's input (" + err.Error() + "), so the call is refused."
	}
	if name := c.ProjectEnv(); name != "" {
		if dir := os.Getenv(name); filepath.IsAbs(dir) {
			e.Roots = append([]string{dir}, e.Roots...)
		}
	}
	if g.agent == "" {
		g.agent = c.ID() // the principal init gives the client's wrapped servers
	}
	cfg, err := loadConfig(g)
	if err != nil {
		return nil, 0, "aqlguard's configuration could not be read, so the call is refused; the user should run `aqlguard doctor`."
	}
	log, err := newLogger(stderr, g.logLevel)
	if err != nil {
		return nil, 0, "aqlguard hook: " + err.Error()
	}
	if hardened != nil {
		log.Warn("could not make the process non-dumpable; verification codes in its memory are less protected", "err", hardened)
	}
	pol, err := policy.Compile(cfg, cfg.Agent)
	if err != nil {
		return nil, 0, "aqlguard's policy does not compile, so the call is refused; the user should run `aqlguard policy check`."
	}
	st, _, err := app.OpenStore(ctx, cfg, log, false)
	if err != nil {
		log.Error("the state could not be opened; the call is refused", "err", err)
		return nil, 0, "aqlguard cannot reach its state, so the call is refused; the user should run `aqlguard doctor`."
	}
	defer func() { _ = st.Close() }()
	gd := app.GuardWith(cfg, pol, st, log, &detachedShow{cfg: cfg, g: g, log: log})
	defer gd.Close()
	if within > askMargin {
		// Where the guard asks the human itself (a client with no ask, a
		// check-in), it waits for the answer as long as the hook may, not
		// the inline_wait MCP clients need (their requests time out
		// sooner): the question is withdrawn when the hook ends.
		gd.InlineWait = max(gd.InlineWait, within-askMargin)
	}
	// A hook is a process per call: the principal's step count and
	// failure pause, which a guard keeps in memory, are taken over from
	// the state before the decision and parked there after it
	// (guard.Resume, guard.Park), as serve does for a guard it drops.
	if err := gd.Resume(ctx); err != nil {
		log.Error("the principal's step count could not be read; the call is refused", "err", err)
		return nil, 0, "aqlguard cannot read its state, so the call is refused; the user should run `aqlguard doctor`."
	}
	defer func() {
		if err := gd.Park(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, parking.ErrBusy) {
			log.Error("the principal's step count could not be kept in the state; this call is not counted", "err", err)
		}
	}()
	j := &hook.Judge{Guard: gd, Voice: proxy.VoiceFor(proxy.ModeTransparent, gd.Channel), Home: ownHomeDir(),
		Wrapped: wrappedBy(c.ID())}
	a, err := j.Decide(ctx, c, e)
	if err != nil {
		log.Error("the hook could not decide", "err", err)
		return nil, 0, "aqlguard could not record its decision, so the call is refused; the user should run `aqlguard doctor`."
	}
	out, code = c.Render(e, a)
	return out, code, ""
}

// wrappedBy reports whether an MCP tool's server is one the client's
// configs run behind aqlguard wrap (clientconfig.GuardedServers, in the
// project of the hook's working directory): by the entry's name, or,
// where the client sends the server's command line instead (Cursor), by
// that command being aqlguard wrap.
func wrappedBy(client string) func(hook.Event) bool {
	return func(e hook.Event) bool {
		if cmd := strings.Fields(e.ServerCommand); len(cmd) > 1 {
			return clientconfig.Entry{Command: cmd[0], Args: cmd[1:]}.Wrapped(self())
		}
		if e.Server == "" {
			return false
		}
		env := clientconfig.DefaultEnv()
		switch {
		case len(e.Roots) > 0:
			env.Project = e.Roots[0] // the project's .mcp.json is at its root
		case e.Cwd != "":
			env.Project = e.Cwd
		}
		for _, gs := range clientconfig.GuardedServers(env, self(), client) {
			if gs.Entry.Name == e.Server {
				return true
			}
		}
		return false
	}
}

// self is this binary's path ("" if unknown).
func self() string {
	p, _ := selfPath()
	return p
}

func ownHomeDir() string {
	h, _ := os.UserHomeDir()
	return h
}

// detachedShow is the human channel of a hook. A hook is a process the
// client waits for, and a code's window must stay up after it has
// answered (until the code is used or expires): Show hands the request
// to `aqlguard hook show-code`, a process of its own session (setsid),
// on a pipe (never in its arguments, which every process can read), and
// returns once it has it. Questions are asked in this process, within
// the hook's deadline. The real channel is built only when used: most
// hooks ask nobody.
type detachedShow struct {
	cfg  *config.Config
	g    *globals
	log  *slog.Logger
	once sync.Once
	ch   verify.Channel
}

func (d *detachedShow) real() verify.Channel {
	d.once.Do(func() { d.ch = app.HumanChannel(d.cfg, d.log, nil) })
	return d.ch
}

func (d *detachedShow) Name() string {
	if d.cfg.Verify.Channel == "command" {
		return "command"
	}
	return "dialog"
}

func (d *detachedShow) Ask(ctx context.Context, r verify.Request) (verify.Answer, error) {
	return d.real().Ask(ctx, r)
}

// Reopens: the window is another process's, which this one cannot show
// again; `aqlguard verify show` can.
func (d *detachedShow) Reopens() bool { return false }

func (d *detachedShow) Show(_ context.Context, r verify.Request) error {
	bin := self()
	if bin == "" {
		return errors.New("this binary's path is not known; the code cannot be handed to a process of its own")
	}
	args := []string{"hook", "show-code"}
	for flag, v := range map[string]string{"--config": d.g.config, "--managed": d.g.managed, "--agent": d.g.agent, "--state-dir": d.g.stateDir} {
		if v != "" {
			args = append(args, flag, v)
		}
	}
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding the code's request: %w", err)
	}
	cmd := exec.Command(bin, args...)
	detach(cmd)
	in, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("a pipe to the process that shows the code: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the process that shows the code: %w", err)
	}
	_, werr := in.Write(body) // far below a pipe's buffer: does not wait for the reader
	if cerr := in.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = cmd.Process.Kill()
		return fmt.Errorf("handing the code to the process that shows it: %w", werr)
	}
	// It outlives this hook; a channel that fails at once (no display)
	// does so within showFails, and is said.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			return fmt.Errorf("the process that shows the code failed: %w", err)
		}
	case <-time.After(showFails):
	}
	return nil
}

// showFails is how long a hook waits for the process that shows a code
// to fail before it takes the code for shown.
const showFails = 300 * time.Millisecond

// cmdHookShowCode shows one code (the request on stdin) through the
// configured channel and waits until it is closed or expires.
func cmdHookShowCode(args []string, stdin io.Reader, stderr io.Writer, hardened error) int {
	fs, g := newFlags("hook show-code", stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var r verify.Request
	if err := json.NewDecoder(io.LimitReader(stdin, 1<<20)).Decode(&r); err != nil {
		fmt.Fprintln(stderr, "aqlguard hook show-code: the request on stdin is not one:", err)
		return 2
	}
	cfg, err := loadConfig(g)
	if err != nil {
		fmt.Fprintln(stderr, "aqlguard:", err)
		return 1
	}
	log, err := newLogger(stderr, g.logLevel)
	if err != nil {
		return 2
	}
	if hardened != nil {
		log.Warn("could not make the process non-dumpable; the verification code in its memory is less protected", "err", hardened)
	}
	ctx, cancel := context.WithDeadline(context.Background(), r.ExpiresAt)
	defer cancel()
	if err := app.HumanChannel(cfg, log, nil).Show(ctx, r); err != nil {
		log.Error("the verification code could not be shown", "err", err)
		return 1
	}
	return 0
}

var _ verify.Channel = (*detachedShow)(nil)
