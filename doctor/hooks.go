package doctor

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/aqlguard/aqlguard/clientconfig"
)

// hooks says, for each client whose settings directory exists, whether
// its own tools are put to the guard (`aqlguard hook`, installed by
// init), and whether each hook runs this binary.
func hooks(in Input) []Check {
	var out []Check
	for _, hf := range clientconfig.HookFiles(in.Env) {
		if len(in.Clients) > 0 && !slices.Contains(in.Clients, hf.Client) {
			continue
		}
		if _, err := os.Stat(filepath.Dir(hf.Path)); err != nil {
			continue
		}
		name := "hooks " + hf.Client
		data, err := os.ReadFile(hf.Path)
		if errors.Is(err, fs.ErrNotExist) {
			out = append(out, Check{Warn, name, "not installed: the client's own tools (its shell, its file edits) are not guarded; `aqlguard init` installs them in " + hf.Path})
			continue
		}
		if err != nil {
			out = append(out, Check{Fail, name, err.Error()})
			continue
		}
		got, err := clientconfig.InstalledHooks(data, in.Self)
		if err != nil {
			out = append(out, Check{Fail, name, hf.Path + ": " + err.Error()})
			continue
		}
		var missing, installed []string
		for _, ev := range hf.Events {
			if _, ok := got[ev.Name]; ok {
				installed = append(installed, ev.Name)
			} else {
				missing = append(missing, ev.Name)
			}
		}
		sort.Strings(installed)
		switch {
		case len(installed) == 0:
			out = append(out, Check{Warn, name, "not installed: the client's own tools are not guarded; `aqlguard init` installs them in " + hf.Path})
		case len(missing) > 0:
			out = append(out, Check{Warn, name, "only " + join(installed) + " in " + hf.Path + "; " + join(missing) + " not guarded (`aqlguard init` adds them)"})
		default:
			c := Check{OK, name, join(installed) + " in " + hf.Path + " run " + got[installed[0]]}
			if wanted := clientconfig.HookCommand(in.Self, hf.Client); in.Self != "" && got[installed[0]] != wanted {
				c.Level, c.Detail = Warn, c.Detail+" (not this binary's command, "+wanted+")"
			}
			out = append(out, c)
		}
	}
	return out
}

func join(ss []string) string {
	s := ""
	for i, x := range ss {
		if i > 0 {
			s += ", "
		}
		s += x
	}
	return s
}
