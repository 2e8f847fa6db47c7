package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/aqlguard/aqlguard/app"
	"github.com/aqlguard/aqlguard/audit/forward"
	"github.com/aqlguard/aqlguard/clientconfig"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/doctor"
	"github.com/aqlguard/aqlguard/store"
)

// cmdDoctor is `aqlguard doctor`: one line per check, exit 1 on a FAIL.
func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	fs, g := newFlags("doctor", stderr)
	var clients listFlag
	fs.Var(&clients, "client", "check only this client's configs and servers (repeatable): "+strings.Join(clientconfig.ClientIDs(), ", "))
	timeout := fs.Duration("timeout", doctor.DefaultStartTimeout, "how long each server may take to start (npx and uvx fetch a package on their first run)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !noWords("doctor", fs.Args(), stderr) {
		return 2
	}
	for _, c := range clients {
		if _, ok := clientconfig.Lookup(c); !ok {
			fmt.Fprintf(stderr, "aqlguard doctor: unknown client %q; known: %s\n", c, strings.Join(clientconfig.ClientIDs(), ", "))
			return 2
		}
	}
	if *timeout <= 0 {
		fmt.Fprintln(stderr, "aqlguard doctor: --timeout must be positive")
		return 2
	}
	in := doctor.Input{Env: clientconfig.DefaultEnv(), Version: version(), Clients: clients, StartTimeout: *timeout}
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
	if in.Config != nil && in.Config.State.Backend == config.StatePostgres {
		cfg := in.Config
		in.OpenState = func(ctx context.Context) (store.State, error) { return app.OpenPostgres(ctx, cfg, nil) }
	}
	if in.Config != nil {
		in.RecordedNames = recordedNames(in.Config, in.StateDir)
		if in.Config.Audit.Forward != nil {
			in.Forwarding = forwardingCheck(in.Config, in.StateDir)
		}
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

// openForDoctor opens the state cfg names read only (the state
// directory dir on bbolt); nil, and no error, when a state directory
// holds no database yet.
func openForDoctor(ctx context.Context, cfg *config.Config, dir string) (store.State, error) {
	if cfg.State.Backend == config.StatePostgres {
		st, err := app.OpenPostgres(ctx, cfg, nil)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return st, nil
	}
	if _, err := os.Stat(filepath.Join(dir, store.FileName)); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	c := *cfg
	c.StateDir = dir
	st, err := app.OpenStateDir(ctx, &c, store.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// recordedNames reads the server names aqlguard processes recorded in the
// state cfg names (the state directory dir, read only: a state that does
// not exist yet holds none).
func recordedNames(cfg *config.Config, dir string) func(ctx context.Context) ([]store.ServerNames, error) {
	return func(ctx context.Context) ([]store.ServerNames, error) {
		st, err := openForDoctor(ctx, cfg, dir)
		if st == nil || err != nil {
			return nil, err
		}
		defer st.Close()
		return doctor.RecordedNames(ctx, st)
	}
}

// forwardingCheck checks the [audit.forward] destination's cursor against
// the audit log of the state cfg names (read only).
func forwardingCheck(cfg *config.Config, dir string) func(ctx context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		st, err := openForDoctor(ctx, cfg, dir)
		if err != nil {
			return "", err
		}
		if st == nil {
			return "no audit log yet: forwarding starts with it", nil
		}
		defer st.Close()
		fw, err := forward.New(cfg.Audit.Forward, st, version(), nil)
		if err != nil {
			return "", err
		}
		defer fw.Log.Close()
		defer fw.Sink.Close()
		dest := fw.Sink.Destination()
		cur, ok, err := forward.CheckCursor(ctx, fw.Log, fw.Cursors, dest)
		if err != nil {
			return "", err
		}
		if !ok {
			return "no cursor yet for " + dest + ": the forwarder starts one", nil
		}
		return fmt.Sprintf("%s delivered through record %d", dest, cur.Seq), nil
	}
}
