package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/aqlguard/aqlguard/clientconfig"
	"github.com/aqlguard/aqlguard/doctor"
	"github.com/aqlguard/aqlguard/store"
)

// cmdDoctor is `aqlguard doctor`: one line per check, exit 1 on a FAIL.
func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	fs, g := newFlags("doctor", stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	in := doctor.Input{Env: clientconfig.DefaultEnv(), Version: version()}
	in.Self, in.SelfErr = selfPath()
	in.Config, in.ConfigErr = loadConfig(g)
	in.StateDir = g.stateDir
	if in.StateDir == "" && in.Config != nil {
		in.StateDir = in.Config.StateDir
	}
	if in.StateDir == "" {
		d, err := store.DefaultDir()
		if err != nil {
			fmt.Fprintln(stderr, "aqlguard:", err)
			return 1
		}
		in.StateDir = d
	}
	ctx, cancel := signalContext()
	defer cancel()
	checks := doctor.Run(ctx, in)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	failed := false
	for _, c := range checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Level, c.Name, c.Detail)
		failed = failed || c.Level == doctor.Fail
	}
	if err := tw.Flush(); err != nil {
		return 1
	}
	if failed {
		return 1
	}
	return 0
}
