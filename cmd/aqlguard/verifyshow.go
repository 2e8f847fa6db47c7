package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/app"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/challenge"
	"github.com/aqlguard/aqlguard/store"
)

const verifyUsage = `usage: aqlguard verify show [--agent NAME] [--config FILE] [--state-dir DIR]
  show a blocked agent's verification code again, for a person who closed
  its window or whose client has restarted since: the block gets a new
  code (the old one no longer lifts it), shown through the human channel
  (a window, or the command channel), never printed here. Without --agent:
  the configured agent, else the one agent that is blocked.
`

// cmdVerify is `aqlguard verify show`: a blocked agent's code, seen
// again (issue 31, item 6). The code lives only in the process that
// made it, so this one gives the block a fresh code and shows that
// (guard.ShowCodeAgain). It waits until the human closes the window or
// the code expires, since the window ends with this process. Nothing it
// prints holds the code: an agent with a shell may run it, and sees only
// that a window was shown.
func cmdVerify(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "show" {
		fmt.Fprint(stderr, verifyUsage)
		return 2
	}
	fs, g := newFlags("verify show", stderr)
	rest, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return 2
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "aqlguard verify show: unexpected argument %q (name the agent with --agent)\n%s", rest[0], verifyUsage)
		return 2
	}
	cfg, err := loadConfig(g)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	level := "warn" // what the channel found is for a server's log, not this terminal
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "log-level" {
			level = g.logLevel
		}
	})
	log, err := newLogger(stderr, level)
	if err != nil {
		fmt.Fprintln(stderr, "aqlguard:", err)
		return 2
	}
	ctx, cancel := signalContext()
	defer cancel()
	// An admin command: each record fsync'd before it goes on.
	cfg.Audit.Sync = string(store.SyncAlways)
	st, _, err := app.OpenStore(ctx, cfg, log, false)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	defer st.Close()
	agent, code := blockedAgent(ctx, st, cfg, g.agent != "", stderr)
	if agent == "" {
		return code
	}
	pol, err := policy.Compile(cfg, agent)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	// Not app.NewGuard: what this shell's channel reaches is not what the
	// client's aqlguard reaches (doctor reads that record).
	gd := app.GuardWith(cfg, pol, st, log, app.HumanChannel(cfg, log, nil))
	defer gd.Close()
	where := "in a window"
	if cfg.Verify.Channel == "command" {
		where = "through the command channel (" + cfg.Verify.Command[0] + ")"
	}
	announce := func(b *store.Block) {
		fmt.Fprintf(stdout, "a new verification code for %s is shown %s until %s (verification %s); "+
			"it replaces the one shown before. Give it to the assistant; close the window when you have it.\n",
			agent, where, b.ChallengeExpiresAt.Local().Format(time.Kitchen), b.VerificationID)
	}
	if _, err := gd.ShowCodeAgain(ctx, osUser(), announce); err != nil {
		if errors.Is(err, challenge.ErrNotBlocked) {
			fmt.Fprintf(stderr, "aqlguard: agent %q is not blocked (aqlguard blocks list); a pause for a code lives in the aqlguard "+
				"that paused it, which shows the code again at the agent's next call\n", agent)
			return 1
		}
		fmt.Fprintf(stderr, "aqlguard: the new code could not be shown: %v; the block stays (`aqlguard doctor` says why; "+
			"`aqlguard unblock %s` lifts it)\n", err, agent)
		return 1
	}
	return 0
}

// blockedAgent is the agent whose code to show: the configured one (or
// --agent's, named is true), else the one agent that is blocked. "" and
// an exit code when there is none to choose.
func blockedAgent(ctx context.Context, st store.State, cfg *config.Config, named bool, stderr io.Writer) (string, int) {
	if named {
		return cfg.Agent, 0
	}
	var blocks []store.Block
	if err := st.Load(ctx, func(v store.View) (err error) { blocks, err = v.Blocks(); return }); err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return "", 1
	}
	var names []string
	for _, b := range blocks {
		if b.Principal == cfg.Agent {
			return cfg.Agent, 0
		}
		names = append(names, b.Principal)
	}
	sort.Strings(names)
	switch len(names) {
	case 0:
		fmt.Fprintln(stderr, "aqlguard: no agent is blocked; a pause for a code lives in the aqlguard that paused it, "+
			"which shows the code again at the agent's next call")
		return "", 1
	case 1:
		return names[0], 0
	}
	fmt.Fprintf(stderr, "aqlguard: several agents are blocked (%s): name one with --agent\n", strings.Join(names, ", "))
	return "", 2
}
