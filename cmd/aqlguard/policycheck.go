package main

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/aqlguard/aqlguard/policy"
)

// cmdPolicyCheck loads a config and reports every error with its line. It
// also compiles the effective policy of the configured agent and of every
// [agents.NAME] override, so a pattern that only one agent sees is checked
// too. Exit status 1 on any error.
func cmdPolicyCheck(args []string, stdout, stderr io.Writer) int {
	fs, g := newFlags("policy check", stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := loadConfig(g)
	if err != nil {
		var list policy.Errors
		if errors.As(err, &list) {
			for _, e := range list {
				fmt.Fprintln(stderr, e.Error())
			}
			fmt.Fprintf(stderr, "%d error(s)\n", len(list))
		} else {
			fmt.Fprintln(stderr, "aqlguard:", err)
		}
		return 1
	}
	principals := []string{cfg.Agent}
	for name := range cfg.Agents {
		if name != cfg.Agent {
			principals = append(principals, name)
		}
	}
	sort.Strings(principals[1:])
	failed := false
	for _, p := range principals {
		if _, err := policy.Compile(cfg, p); err != nil {
			fmt.Fprintf(stderr, "agent %s: %v\n", p, err)
			failed = true
		}
	}
	if failed {
		return 1
	}
	source := cfg.Path
	if source == "" {
		source = "embedded defaults"
	}
	fmt.Fprintf(stdout, "%s: OK (mode %s, agent %s, %d server(s), loop %s)\n",
		source, cfg.Mode, cfg.Agent, len(cfg.Servers), cfg.Safety.Loop)
	return 0
}
