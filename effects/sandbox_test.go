package effects

import "testing"

// TestSandboxProfileFor: a command line names a well-known server by its
// package as a whole path segment, with or without a version, however
// it is run; a server whose name only starts the same is not it.
func TestSandboxProfileFor(t *testing.T) {
	tests := []struct {
		command string
		args    []string
		want    string
	}{
		{"npx", []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"}, "filesystem"},
		{"npx", []string{"-y", "@modelcontextprotocol/server-memory@2026.8.31"}, "memory"},
		{"node", []string{"/x/node_modules/@modelcontextprotocol/server-everything/dist/index.js"}, "everything"},
		{"uvx", []string{"mcp-server-fetch"}, "fetch"},
		{"uvx", []string{"mcp-server-fetch==2026.7.10"}, "fetch"},
		{"python", []string{"-m", "mcp_server_git", "--repository", "/r"}, "git"},
		{"npx", []string{"-y", "@modelcontextprotocol/server-github"}, "github"},
		{"uvx", []string{"mcp-server-github-lookalike"}, ""},
		{"npx", []string{"-y", "server-memory"}, ""},
		{"node", []string{"/x/my-server-filesystem-fork/index.js"}, ""},
	}
	for _, tc := range tests {
		got := ""
		if p := SandboxProfileFor(tc.command, tc.args); p != nil {
			got = p.Name
		}
		if got != tc.want {
			t.Errorf("%s %q: profile %q, want %q", tc.command, tc.args, got, tc.want)
		}
	}
	ps, err := Profiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"filesystem", "memory", "everything", "fetch", "git"} {
		found := false
		for _, p := range ps {
			found = found || (p.Name == name && p.Sandbox != nil)
		}
		if !found {
			t.Errorf("the shipped profile %s says nothing of its sandbox", name)
		}
	}
}
