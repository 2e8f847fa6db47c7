package effects

import (
	"fmt"
	"strings"
)

// ProfileSandbox is what a well-known server needs of its sandbox beyond
// what its entry implies (package sandbox derives that): read off the
// server's source, as the tools are.
type ProfileSandbox struct {
	// Match are the names that say a command line runs this server: its
	// package ("@modelcontextprotocol/server-memory", "mcp-server-fetch")
	// or module ("mcp_server_git"), matched as whole path segments of an
	// argument (so server-git is not server-github), with or without an
	// "@version".
	Match []string `json:"match"`
	// Network is "any" (the server fetches what it is asked to, from
	// anywhere), "none", or "" for the default (the runtime's ports and
	// Connect).
	Network string `json:"network,omitempty"`
	// Connect are more TCP ports it connects to.
	Connect []uint16 `json:"connect,omitempty"`
	// WriteBesideScript says it writes its data beside its own script by
	// default (the memory server's memory.jsonl), unless WriteEnv names
	// another place.
	WriteBesideScript bool `json:"write_beside_script,omitempty"`
	// WriteEnv are environment variables that name the file it writes
	// instead (MEMORY_FILE_PATH).
	WriteEnv []string `json:"write_env,omitempty"`
	// Why says in plain words why it needs what it is given.
	Why string `json:"why"`
}

func (s *ProfileSandbox) check() error {
	if s == nil {
		return nil
	}
	if len(s.Match) == 0 || s.Why == "" {
		return fmt.Errorf("sandbox: match and why are required")
	}
	switch s.Network {
	case "", "any", "none":
	default:
		return fmt.Errorf("sandbox: network %q is not \"any\", \"none\" or empty", s.Network)
	}
	return nil
}

// SandboxProfileFor is the shipped profile whose sandbox part names the
// server a command line runs, or nil.
func SandboxProfileFor(command string, args []string) *Profile {
	ps, _ := Profiles()
	argv := append([]string{command}, args...)
	for _, p := range ps {
		if p.Sandbox == nil {
			continue
		}
		for _, a := range argv {
			for _, m := range p.Sandbox.Match {
				if namesPackage(a, m) {
					return p
				}
			}
		}
	}
	return nil
}

// namesPackage reports whether the argument a names the package or
// module name: its path segments hold name's segments one after the
// other, the last of them with an "@version" or not.
func namesPackage(a, name string) bool {
	segs := strings.Split(a, "/")
	want := strings.Split(name, "/")
	for i := 0; i+len(want) <= len(segs); i++ {
		ok := true
		for j, w := range want {
			s := segs[i+j]
			if j == len(want)-1 {
				// "server-memory@2026.8.31", "mcp-server-fetch==2026.7.10"
				if k := strings.IndexAny(s[min(1, len(s)):], "@="); k >= 0 {
					s = s[:k+min(1, len(s))]
				}
			}
			if s != w {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
