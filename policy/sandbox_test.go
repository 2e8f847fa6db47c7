package policy

import (
	"strings"
	"testing"
)

// TestSandboxValidation: [servers.sandbox]'s mistakes, each with its key
// and line; its defaults.
func TestSandboxValidation(t *testing.T) {
	const fs = "[[servers]]\nname = \"fs\"\ncommand = \"npx\"\n"
	tests := []struct{ name, toml, want string }{
		{"remote", "[[servers]]\nname = \"gh\"\nurl = \"https://x.example/mcp\"\n[servers.sandbox]\nmode = \"off\"\n", "servers[0].sandbox: only applies to servers started with command"},
		{"mode", fs + "[servers.sandbox]\nmode = \"strict\"\n", `servers[0].sandbox.mode: "strict" is not valid; use "auto" or "off"`},
		{"network", fs + "[servers.sandbox]\nnetwork = \"loopback\"\n", `servers[0].sandbox.network: "loopback" is not valid`},
		{"relative", fs + "[servers.sandbox]\nwrite = [\"notes\"]\n", `servers[0].sandbox.write[0]: "notes" is not an absolute path`},
		{"port", fs + "[servers.sandbox]\nconnect = [70000]\n", "servers[0].sandbox.connect[0]: 70000 is not a TCP port"},
		{"connect without auto", fs + "[servers.sandbox]\nnetwork = \"none\"\nconnect = [443]\n", `servers[0].sandbox.connect: only applies with network = "auto"`},
		{"bind with any", fs + "[servers.sandbox]\nnetwork = \"any\"\nbind = [8080]\n", `servers[0].sandbox.bind: does nothing with network = "any"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.toml), "c.toml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
	cfg, err := Parse([]byte(fs+"[servers.sandbox]\nread = [\"~/.config/x\"]\nwrite = [\"/srv/data\"]\nconnect = [5432]\n"), "c.toml")
	if err != nil {
		t.Fatal(err)
	}
	if sb := cfg.Servers[0].Sandbox; sb.Mode != "auto" || sb.Network != "auto" || sb.Read[0] != "~/.config/x" || sb.Connect[0] != 5432 {
		t.Errorf("sandbox %+v", sb)
	}
}
