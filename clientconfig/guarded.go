package clientconfig

import (
	"os"
	"path/filepath"
	"strings"
)

// Guarded is a server a client config runs behind `aqlguard wrap` (an
// entry init wrote, or one written by hand the same way): what the
// aqlguard the client starts will guard, read from the entry's own
// arguments.
type Guarded struct {
	File  File
	Entry Entry
	// Name is the server's name as wrap is given it: --name, else (a
	// local server) its command's base name. Not yet made a valid
	// server name (policy.ServerNameFrom does that, as wrap does).
	Name string
	// Agent is wrap's --agent, the principal its aqlguard runs as; ""
	// when the entry gives none (the config's agent then).
	Agent string
	// Argv is a local server's command and arguments (what follows
	// "--"); URL a remote one's (--url). One of them is set.
	Argv []string
	URL  string
	// Self says the entry runs self (the binary given to GuardedServers),
	// not another aqlguard binary.
	Self bool
}

// GuardedServers lists the servers the detected client configs (of the
// clients ids, none: every client) run behind aqlguard wrap. self is
// this binary's path ("" if unknown). A file that cannot be read or
// parsed is skipped: `aqlguard doctor` reports it.
func GuardedServers(env Env, self string, ids ...string) []Guarded {
	var out []Guarded
	for _, f := range Detect(env, ids...) {
		data, err := os.ReadFile(f.Path)
		if err != nil {
			continue
		}
		entries, _ := Entries(f, data)
		for _, e := range entries {
			if e.Unsupported != "" || !e.Wrapped(self) {
				continue
			}
			g := Guarded{File: f, Entry: e, Agent: WrapFlag(e.Args, "--agent"), Argv: e.Wrappee(),
				URL: WrapFlag(e.Args, "--url"), Self: self == "" || SamePath(e.Command, self)}
			g.Name = WrapFlag(e.Args, "--name")
			if g.Name == "" && len(g.Argv) > 0 {
				g.Name = filepath.Base(g.Argv[0])
			}
			if len(g.Argv) == 0 && g.URL == "" {
				continue // wrap with nothing to guard: the client's start fails, doctor says so
			}
			out = append(out, g)
		}
	}
	return out
}

// WrapFlag is the value of a wrap entry's flag (--name, --agent, --url)
// before "--", "" when it is not given.
func WrapFlag(args []string, flag string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if (a == flag || a == flag[1:]) && i+1 < len(args) { // Go's flags take -name too
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
		if v, ok := strings.CutPrefix(a, flag[1:]+"="); ok {
			return v
		}
	}
	return ""
}
