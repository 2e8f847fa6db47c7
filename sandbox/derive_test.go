package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/config"
)

// machine is a fake machine in a temporary directory: a home with the
// places the client configs below name, and programs in a bin directory
// outside it that LookPath finds.
type machine struct {
	root, home, bin string
}

func newMachine(t *testing.T) machine {
	root := t.TempDir()
	m := machine{root: root, home: filepath.Join(root, "home"), bin: filepath.Join(root, "opt", "node", "bin")}
	for _, d := range []string{"projects", "notes", ".ssh", ".npm", ".cache/uv", "repo/.git", "code/srv/dist", ".config/claude"} {
		mkdir(t, filepath.Join(m.home, d))
	}
	mkdir(t, m.bin)
	for _, f := range []string{"npx", "node", "uvx", "docker"} {
		write(t, filepath.Join(m.bin, f))
	}
	write(t, filepath.Join(m.home, "code/srv/package.json"))
	write(t, filepath.Join(m.home, "server.js"))
	write(t, filepath.Join(m.home, "code/srv/dist/index.js"))
	mkdir(t, filepath.Join(root, "npm/node_modules/@modelcontextprotocol/server-memory/dist"))
	write(t, filepath.Join(root, "npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js"))
	return m
}

func mkdir(t *testing.T, d string) {
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, f string) {
	if err := os.WriteFile(f, []byte("x"), 0o700); err != nil {
		t.Fatal(err)
	}
}

func (m machine) env(getenv map[string]string) Env {
	return Env{Home: m.home, Dir: m.root, Getenv: func(k string) string { return getenv[k] },
		LookPath: func(name string) (string, error) {
			p := filepath.Join(m.bin, name)
			if _, err := os.Stat(p); err != nil {
				return "", err
			}
			return p, nil
		}}
}

// TestDeriveByClientConfig: the grant each shape of server entry that
// clients' configs hold implies: what it may write, read, and where it
// may connect; and what the rest of the home is (not in it).
func TestDeriveByClientConfig(t *testing.T) {
	m := newMachine(t)
	h := func(p string) string { return filepath.Join(m.home, p) }
	memJS := filepath.Join(m.root, "npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js")
	tests := []struct {
		name     string
		server   config.Server
		getenv   map[string]string
		write    []string // in the grant's Write
		read     []string // in the grant's Read (or Write)
		notRead  []string // readable by nothing in the grant
		network  Network
		connect  []uint16
		profile  string
		noteSays string
	}{
		{name: "npx filesystem (Claude Desktop's example)",
			server:  config.Server{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "~/projects", h("notes")}},
			write:   []string{h("projects"), h("notes"), h(".npm")},
			read:    []string{filepath.Dir(m.bin), "/usr"},
			notRead: []string{h(".ssh/id_rsa"), h(".config/claude"), m.home},
			network: NetPorts, connect: []uint16{53, 443}, profile: "filesystem"},
		{name: "node script of a package (our e2e), memory keeps its file beside its script",
			server:  config.Server{Command: "node", Args: []string{memJS}},
			write:   []string{filepath.Dir(memJS)},
			read:    []string{filepath.Join(m.root, "npm")},
			notRead: []string{h(".ssh"), h("projects")},
			network: NetNone, profile: "memory"},
		{name: "memory with MEMORY_FILE_PATH: that file's directory, not its dist",
			server:  config.Server{Command: "node", Args: []string{memJS}, Env: map[string]string{"MEMORY_FILE_PATH": h("notes/memory.jsonl")}},
			write:   []string{h("notes")},
			notRead: []string{h(".ssh")},
			network: NetNone, profile: "memory"},
		{name: "a script of one's own: its project, read only",
			server:  config.Server{Command: "node", Args: []string{h("code/srv/dist/index.js")}},
			read:    []string{h("code/srv")},
			notRead: []string{h("code"), h(".ssh")},
			network: NetPorts, connect: []uint16{53, 443}},
		{name: "a script in the home itself: the file alone",
			server:  config.Server{Command: "node", Args: []string{h("server.js")}},
			read:    []string{h("server.js")},
			notRead: []string{h("projects"), h(".ssh")},
			network: NetPorts, connect: []uint16{53, 443}},
		{name: "uvx fetch: any network, uv's cache",
			server:  config.Server{Command: "uvx", Args: []string{"mcp-server-fetch"}},
			write:   []string{h(".cache/uv"), h(".local/share/uv")},
			notRead: []string{h(".ssh"), h("projects")},
			network: NetAny, profile: "fetch"},
		{name: "uvx git --repository: the repository; the runner keeps its registry",
			server:  config.Server{Command: "uvx", Args: []string{"mcp-server-git", "--repository", h("repo")}},
			write:   []string{h("repo")},
			notRead: []string{h(".ssh")},
			network: NetPorts, connect: []uint16{53, 443}, profile: "git"},
		{name: "the whole home named is granted, and said",
			server:  config.Server{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "~"}},
			write:   []string{m.home, h(".ssh/id_rsa")},
			network: NetPorts, connect: []uint16{53, 443}, profile: "filesystem",
			noteSays: "the server may read and write all of it, ~/.ssh too"},
		{name: "a file it makes in the home: the file alone, made before it starts",
			server:  config.Server{Command: "node", Args: []string{h("code/srv/dist/index.js"), "--log", h("server.log")}, Env: map[string]string{"DATA": "/"}},
			write:   []string{h("server.log")},
			notRead: []string{h(".ssh"), h("other.log")},
			network: NetPorts, connect: []uint16{53, 443},
			noteSays: "is /, everything: not granted"},
		{name: "roots, sandbox read and write, connect, a proxy",
			server: config.Server{Command: "docker", Args: []string{"run", "-i", "--rm", "mcp/thing"},
				Roots:   []string{"file://" + h("projects")},
				Sandbox: config.Sandbox{Read: []string{"~/.config/claude"}, Write: []string{"~/notes"}, Connect: []int{5432}}},
			getenv:  map[string]string{"HTTPS_PROXY": "http://proxy.corp:3128"},
			write:   []string{h("projects"), h("notes")},
			read:    []string{h(".config/claude")},
			notRead: []string{h(".ssh")},
			network: NetPorts, connect: []uint16{53, 443, 3128, 5432}},
		{name: "network none in so many words",
			server:  config.Server{Command: "npx", Args: []string{"-y", "some-server"}, Sandbox: config.Sandbox{Network: "none"}},
			network: NetNone},
		{name: "XDG_CACHE_HOME moves uv's cache",
			server:  config.Server{Command: "uvx", Args: []string{"some-server"}},
			getenv:  map[string]string{"XDG_CACHE_HOME": filepath.Join(m.root, "cache")},
			write:   []string{filepath.Join(m.root, "cache/uv")},
			notRead: []string{h(".cache/uv")},
			network: NetPorts, connect: []uint16{53, 443}},
		{name: "a log file it creates: its directory",
			server:  config.Server{Command: "node", Args: []string{h("code/srv/dist/index.js"), "-log=" + h("notes/calls.jsonl")}},
			write:   []string{h("notes")},
			read:    []string{h("code/srv")},
			network: NetPorts, connect: []uint16{53, 443}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.server.Name = "s"
			if tc.server.Sandbox.Network == "" {
				tc.server.Sandbox.Network = "auto"
			}
			g := Derive(tc.server, m.env(tc.getenv))
			t.Logf("grant: %s; notes: %q", g.Summary(), g.Notes)
			for _, p := range tc.write {
				if !g.CanWrite(p) {
					t.Errorf("cannot write %s", p)
				}
			}
			for _, p := range tc.read {
				if !g.CanRead(p) {
					t.Errorf("cannot read %s", p)
				}
			}
			for _, p := range tc.notRead {
				if g.CanRead(p) {
					t.Errorf("can read %s", p)
				}
			}
			if g.Network != tc.network || !slices.Equal(g.Connect, tc.connect) {
				t.Errorf("network %s %v, want %s %v", g.Network, g.Connect, tc.network, tc.connect)
			}
			if g.Profile != tc.profile {
				t.Errorf("profile %q, want %q", g.Profile, tc.profile)
			}
			if tc.noteSays != "" && !strings.Contains(strings.Join(g.Notes, "\n"), tc.noteSays) {
				t.Errorf("notes %q do not say %q", g.Notes, tc.noteSays)
			}
			for _, p := range g.Write {
				if within(m.home, p) && !slices.Contains(tc.write, m.home) {
					t.Errorf("the grant writes %s, the home or above it", p)
				}
			}
		})
	}
}

func TestDeriveOff(t *testing.T) {
	g := Derive(config.Server{Name: "s", Command: "npx", Sandbox: config.Sandbox{Mode: "off"}}, Env{})
	if !g.Off || !g.CanRead("/root/.ssh/id_rsa") || g.Summary() != "off: unconfined" {
		t.Errorf("mode off: %+v", g)
	}
}

func TestNormalize(t *testing.T) {
	g := Grant{Read: []string{"/a/b", "/usr", "/usr/lib", "/c"}, Write: []string{"/a", "/a/x", "/d"}, Connect: []uint16{443, 53, 443}}
	g.normalize()
	if !slices.Equal(g.Read, []string{"/c", "/usr"}) || !slices.Equal(g.Write, []string{"/a", "/d"}) || !slices.Equal(g.Connect, []uint16{53, 443}) {
		t.Errorf("normalized: %+v", g)
	}
}
