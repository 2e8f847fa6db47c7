package doctor

import (
	"strings"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/sandbox"
)

// sandboxChecks say what this machine enforces of a server's sandbox,
// and each stdio server's grant: loud (warn) for one that runs
// unconfined, and for what its entry names that the grant left out or
// that gives it the whole home.
func sandboxChecks(servers []config.Server, labels map[string]string) []Check {
	e := sandbox.Support()
	machine := Check{OK, "sandbox", e.String()}
	if !e.Confines() {
		machine.Level = Warn
	}
	out := []Check{machine}
	for _, s := range servers {
		if s.Command == "" {
			continue
		}
		label := "sandbox of " + s.Name
		if l, ok := labels[s.Name]; ok {
			label = "sandbox of " + l
		}
		g := sandbox.Derive(s, sandbox.CurrentEnv(s))
		switch {
		case g.Off:
			out = append(out, Check{Warn, label, `OFF ([servers.sandbox] mode = "off"): the server may read and write everything you may, ~/.ssh too`})
			continue
		case !e.Confines():
			out = append(out, Check{Warn, label, "not enforced on this machine; its grant would be: " + g.Summary()})
		default:
			out = append(out, Check{OK, label, "confined (" + e.Mechanism + "): " + g.Summary()})
		}
		if len(g.Notes) > 0 {
			out = append(out, Check{Warn, label, strings.Join(g.Notes, "; ")})
		}
	}
	return out
}
