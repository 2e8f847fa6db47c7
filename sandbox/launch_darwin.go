//go:build darwin

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
)

// sandboxExec is macOS's sandbox-exec(1): deprecated in its man page
// since 10.12 and still what every macOS ships and Apple's own tools use.
const sandboxExec = "/usr/bin/sandbox-exec"

// Support: sandbox-exec, where the system has it.
func Support() Enforcement {
	if _, err := os.Stat(sandboxExec); err != nil {
		return Enforcement{Missing: []string{"everything: " + sandboxExec + " is not on this Mac; servers run unconfined"}}
	}
	return Enforcement{Mechanism: "sandbox-exec", Enforced: []string{"files: read, write, execute", "TCP connect and listen, by port"},
		Missing: []string{"hosts: TCP rules are by port, so a granted port is open on every host",
			"untested on a Mac by aqlguard's CI (the profile's text is tested): set mode = \"off\" for a server it wrongly refuses, and tell us"}}
}

// Launch starts cmd under sandbox-exec with g as its profile (SBPL); g's
// places with their links resolved (macOS's /tmp is /private/tmp).
func Launch(g Grant, cmd *exec.Cmd, start func() error, wait func()) error {
	if !g.Off && Support().Confines() {
		g.Read, g.Write = realPaths(g.Read), realPaths(g.Write)
		cmd.Args = append([]string{"sandbox-exec", "-p", SBPL(g), cmd.Path}, cmd.Args[1:]...)
		cmd.Path = sandboxExec
	}
	if err := start(); err != nil {
		return err
	}
	go wait()
	return nil
}

func realPaths(ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		out = append(out, p)
	}
	return out
}
