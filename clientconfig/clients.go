// Package clientconfig knows where MCP clients keep their server lists and
// edits those files surgically: it wraps a server entry in place (its
// command becomes `aqlguard wrap --name N --agent CLIENT -- <original
// command and args>`) and restores it byte for byte.
//
// Every edit replaces the bytes of one server entry and nothing else, so
// comments, key order, indentation, trailing commas and line endings
// elsewhere stay as they were, and restoring the entry's original bytes
// gives back the original file. The formats are read with libraries that
// report byte positions, never re-serialised: JSON and JSONC with
// github.com/tailscale/hujson, TOML with go-toml's unstable parser, YAML
// with gopkg.in/yaml.v3's node positions.
package clientconfig

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Format is a config file's syntax.
type Format string

const (
	JSON Format = "json" // JSON, or JSONC (comments, trailing commas)
	TOML Format = "toml"
	YAML Format = "yaml"
)

// Layout says where a file keeps its servers and how an entry looks.
type Layout string

const (
	// MCPServers: {"mcpServers": {NAME: {command, args, env, ...}}}
	// (Claude Desktop, Claude Code, Cursor, Windsurf, Gemini CLI). In
	// Claude Code's ~/.claude.json also projects.<dir>.mcpServers (the
	// local scope).
	MCPServers Layout = "mcpServers"
	// VSCodeServers: {"servers": {NAME: {type, command, args, env}}}.
	VSCodeServers Layout = "servers"
	// ZedServers: {"context_servers": {NAME: {command: {path, args, env}}
	// or {command, args, env}}} (JSONC).
	ZedServers Layout = "context_servers"
	// CodexServers: [mcp_servers.NAME] tables with command, args, env.
	CodexServers Layout = "mcp_servers"
	// ContinueServers: mcpServers: a YAML list of {name, command, args}.
	ContinueServers Layout = "continue"
)

// File is one client config file.
type File struct {
	Path   string
	Client string // client id, e.g. "claude-desktop"
	Format Format
	Layout Layout
	// Scope is where the file applies: "user" or "project".
	Scope string
}

// Client is an MCP client aqlguard knows.
type Client struct {
	ID   string
	Name string
	// files lists the client's config files for env, existing or not.
	files func(env Env) []File
}

// Env is what locating config files depends on. Zero fields are filled
// from the process (see DefaultEnv).
type Env struct {
	GOOS         string
	Home         string
	ConfigHome   string // $XDG_CONFIG_HOME, else ~/.config
	AppData      string // %APPDATA% (Windows)
	LocalAppData string // %LOCALAPPDATA% (Windows)
	CodexHome    string // $CODEX_HOME, else ~/.codex
	Project      string // the project directory for project-scoped files
}

// DefaultEnv reads Env from the process.
func DefaultEnv() Env {
	home, _ := os.UserHomeDir()
	e := Env{GOOS: runtime.GOOS, Home: home, ConfigHome: os.Getenv("XDG_CONFIG_HOME"),
		AppData: os.Getenv("APPDATA"), LocalAppData: os.Getenv("LOCALAPPDATA"), CodexHome: os.Getenv("CODEX_HOME")}
	e.Project, _ = os.Getwd()
	return e.filled()
}

func (e Env) filled() Env {
	if e.GOOS == "" {
		e.GOOS = runtime.GOOS
	}
	if e.ConfigHome == "" {
		e.ConfigHome = filepath.Join(e.Home, ".config")
	}
	if e.CodexHome == "" {
		e.CodexHome = filepath.Join(e.Home, ".codex")
	}
	return e
}

func appSupport(e Env, parts ...string) string {
	return filepath.Join(append([]string{e.Home, "Library", "Application Support"}, parts...)...)
}

// Clients are the clients aqlguard init knows, in the order it reports
// them.
var Clients = []Client{
	{ID: "claude-desktop", Name: "Claude Desktop", files: func(e Env) []File {
		f := func(p string) File {
			return File{Path: p, Client: "claude-desktop", Format: JSON, Layout: MCPServers, Scope: "user"}
		}
		switch e.GOOS {
		case "darwin":
			return []File{f(appSupport(e, "Claude", "claude_desktop_config.json"))}
		case "windows":
			out := []File{f(filepath.Join(e.AppData, "Claude", "claude_desktop_config.json"))}
			// The Microsoft Store (MSIX) build keeps its config in a
			// virtualised AppData under its package directory.
			packages, _ := filepath.Glob(filepath.Join(e.LocalAppData, "Packages", "Claude_*"))
			for _, p := range packages {
				out = append(out, f(filepath.Join(p, "LocalCache", "Roaming", "Claude", "claude_desktop_config.json")))
			}
			return out
		}
		return []File{f(filepath.Join(e.ConfigHome, "Claude", "claude_desktop_config.json"))}
	}},
	{ID: "claude-code", Name: "Claude Code", files: func(e Env) []File {
		out := []File{{Path: filepath.Join(e.Home, ".claude.json"), Client: "claude-code", Format: JSON, Layout: MCPServers, Scope: "user"}}
		if e.Project != "" {
			out = append(out, File{Path: filepath.Join(e.Project, ".mcp.json"), Client: "claude-code", Format: JSON, Layout: MCPServers, Scope: "project"})
		}
		return out
	}},
	{ID: "cursor", Name: "Cursor", files: func(e Env) []File {
		out := []File{{Path: filepath.Join(e.Home, ".cursor", "mcp.json"), Client: "cursor", Format: JSON, Layout: MCPServers, Scope: "user"}}
		if e.Project != "" {
			out = append(out, File{Path: filepath.Join(e.Project, ".cursor", "mcp.json"), Client: "cursor", Format: JSON, Layout: MCPServers, Scope: "project"})
		}
		return out
	}},
	{ID: "vscode", Name: "VS Code", files: func(e Env) []File {
		var user string
		switch e.GOOS {
		case "darwin":
			user = appSupport(e, "Code", "User", "mcp.json")
		case "windows":
			user = filepath.Join(e.AppData, "Code", "User", "mcp.json")
		default:
			user = filepath.Join(e.ConfigHome, "Code", "User", "mcp.json")
		}
		out := []File{{Path: user, Client: "vscode", Format: JSON, Layout: VSCodeServers, Scope: "user"}}
		if e.Project != "" {
			out = append(out, File{Path: filepath.Join(e.Project, ".vscode", "mcp.json"), Client: "vscode", Format: JSON, Layout: VSCodeServers, Scope: "project"})
		}
		return out
	}},
	{ID: "windsurf", Name: "Windsurf", files: func(e Env) []File {
		return []File{{Path: filepath.Join(e.Home, ".codeium", "windsurf", "mcp_config.json"), Client: "windsurf", Format: JSON, Layout: MCPServers, Scope: "user"}}
	}},
	{ID: "zed", Name: "Zed", files: func(e Env) []File {
		p := filepath.Join(e.ConfigHome, "zed", "settings.json")
		if e.GOOS == "windows" {
			p = filepath.Join(e.AppData, "Zed", "settings.json")
		}
		return []File{{Path: p, Client: "zed", Format: JSON, Layout: ZedServers, Scope: "user"}}
	}},
	{ID: "codex", Name: "Codex", files: func(e Env) []File {
		return []File{{Path: filepath.Join(e.CodexHome, "config.toml"), Client: "codex", Format: TOML, Layout: CodexServers, Scope: "user"}}
	}},
	{ID: "gemini", Name: "Gemini CLI", files: func(e Env) []File {
		out := []File{{Path: filepath.Join(e.Home, ".gemini", "settings.json"), Client: "gemini", Format: JSON, Layout: MCPServers, Scope: "user"}}
		if e.Project != "" {
			out = append(out, File{Path: filepath.Join(e.Project, ".gemini", "settings.json"), Client: "gemini", Format: JSON, Layout: MCPServers, Scope: "project"})
		}
		return out
	}},
	{ID: "continue", Name: "Continue", files: func(e Env) []File {
		return []File{{Path: filepath.Join(e.Home, ".continue", "config.yaml"), Client: "continue", Format: YAML, Layout: ContinueServers, Scope: "user"}}
	}},
}

// ClientIDs lists the known client ids.
func ClientIDs() []string {
	out := make([]string, len(Clients))
	for i, c := range Clients {
		out[i] = c.ID
	}
	return out
}

// Lookup finds a client by id.
func Lookup(id string) (Client, bool) {
	for _, c := range Clients {
		if c.ID == id {
			return c, true
		}
	}
	return Client{}, false
}

// Files lists the client's config files for env, existing or not.
func (c Client) Files(env Env) []File { return c.files(env.filled()) }

// Detect lists the config files that exist for env, of the clients named
// (all when ids is empty), in client order.
func Detect(env Env, ids ...string) []File {
	var out []File
	seen := map[string]bool{}
	for _, c := range Clients {
		if len(ids) > 0 && !contains(ids, c.ID) {
			continue
		}
		for _, f := range c.Files(env) {
			if seen[f.Path] {
				continue
			}
			if fi, err := os.Stat(f.Path); err == nil && fi.Mode().IsRegular() {
				seen[f.Path] = true
				out = append(out, f)
			}
		}
	}
	return out
}

// ForPath describes a file named on the command line: its client from
// the name given (if any), else from where the file is and what it is
// called.
func ForPath(path, client string, env Env) (File, bool) {
	abs, err := filepath.Abs(path)
	if err == nil {
		path = abs
	}
	if client != "" {
		c, ok := Lookup(client)
		if !ok {
			return File{}, false
		}
		// The client's own file of that name, for its layout.
		for _, f := range c.Files(env) {
			if filepath.Base(f.Path) == filepath.Base(path) {
				f.Path = path
				return f, true
			}
		}
		fs := c.Files(env)
		f := fs[0]
		f.Path = path
		return f, true
	}
	base := filepath.Base(path)
	dir := filepath.Base(filepath.Dir(path))
	var guess string
	switch {
	case base == "claude_desktop_config.json":
		guess = "claude-desktop"
	case base == ".claude.json", base == ".mcp.json":
		guess = "claude-code"
	case base == "mcp.json" && dir == ".cursor":
		guess = "cursor"
	case base == "mcp.json":
		guess = "vscode"
	case base == "mcp_config.json":
		guess = "windsurf"
	case base == "settings.json" && strings.EqualFold(dir, "zed"):
		guess = "zed"
	case base == "settings.json":
		guess = "gemini"
	case strings.HasSuffix(base, ".toml"):
		guess = "codex"
	case strings.HasSuffix(base, ".yaml"), strings.HasSuffix(base, ".yml"):
		guess = "continue"
	default:
		return File{}, false
	}
	return ForPath(path, guess, env)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
