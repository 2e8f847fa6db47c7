package config

import (
	"strings"

	"github.com/aqlguard/aqlguard/policy/paths"
)

// Server is one [[servers]] entry: a stdio command or a remote URL.
type Server struct {
	Name string `toml:"name"`
	// Title is the name as the client config spells it ("notes-desktop"),
	// when wrap made Name from it ("notesdesktop"): what messages and
	// logs show (Label). Never read from a file.
	Title     string            `toml:"-"`
	Command   string            `toml:"command"`
	Args      []string          `toml:"args"`
	Env       map[string]string `toml:"env"`
	Cwd       string            `toml:"cwd"`
	URL       string            `toml:"url"`
	Headers   map[string]string `toml:"headers"`
	Transport string            `toml:"transport"` // stdio | streamable | sse (inferred when empty)
	// Protocol is the MCP revision spoken to the server: "auto" (the
	// default: server/discover says whether it speaks 2026-07-28, else
	// initialize), "2026-07-28" or "2025-11-25".
	Protocol string `toml:"protocol"`
	// Auth is how aqlguard authenticates to a remote server: "none" (the
	// default; headers may carry an API key) or "oauth" (MCP's OAuth 2.1
	// authorization: consent in the browser once, tokens kept).
	Auth string `toml:"auth"`
	// OAuthClientID is a client id registered with the server's
	// authorization server beforehand; without it aqlguard registers
	// itself (dynamic client registration).
	OAuthClientID string `toml:"oauth_client_id"`
	// Insecure accepts a url that is plain http:// to a host that is not
	// this machine, which is otherwise an error; credentials (auth =
	// "oauth", headers that carry one, a user name or password in the
	// url) are never sent over it (transport.go).
	Insecure bool `toml:"insecure"`
	// StartTimeout bounds connect + initialize + tools/list.
	StartTimeout Duration `toml:"start_timeout"`
	// CallTimeout bounds one request to the server (a tool call, a read);
	// then the request is cancelled and fails.
	CallTimeout Duration `toml:"call_timeout"`
	// Categories overrides the semantic category of named tools.
	Categories map[string]string `toml:"categories"`
	// TrustFirstSight pins the tools this server lists the first time as
	// they are, without the human's first-sight review (the behaviour
	// before reviews existed); their descriptions are still scanned, and
	// a later change still waits for a human.
	TrustFirstSight bool `toml:"trust_first_sight"`
	// Effects says what named tools do (tool = "read" | "write" |
	// "delete" | "execute" | "send" | "none", or several separated by
	// commas), over the shipped profiles and what the tools' schemas
	// and descriptions say (package effects).
	Effects map[string]string `toml:"effects"`
	// Arguments declares the role of this server's arguments
	// ("[TOOL:]ARGUMENT" = "command" | "code" | "query" | "path" | "url" |
	// "content" | "other"), over what the schema and the names say.
	Arguments map[string]string `toml:"arguments"`
	// AllowUndeclaredArguments lets a call pass arguments its tool's
	// input schema does not declare (a server whose tools take free-form
	// arguments); they are forwarded as sent, their roles read from
	// their names. Default false: such a call is refused, naming them.
	AllowUndeclaredArguments bool `toml:"allow_undeclared_arguments"`
	// Share lets `aqlguard serve` run one process of this stdio server
	// for all its client sessions instead of one per session; aqlguard
	// routes what MCP scopes to a session (docs/design.md, "Shared
	// servers").
	Share bool `toml:"share"`
	// Roots are the roots this server works in (absolute URIs, such as
	// file:///home/alice/projects): its path arguments are judged
	// against them (RootPaths). With share, they are also pinned: the
	// shared server is given them (roots/list is answered with them,
	// never asked of a client); without share, the server's roots/list
	// is still its client's to answer. nil when not set; with share and
	// no roots, sessions that declare different roots cannot share the
	// server.
	Roots []string `toml:"roots"`
	// Sandbox is how the operating system confines this server, when
	// aqlguard starts it (package sandbox): what it may read and write
	// beyond what its entry implies, and where it may connect.
	Sandbox Sandbox `toml:"sandbox"`

	// Managed says the server is the managed layer's (Overlay): its
	// categories and argument roles are the managed layer's own.
	Managed bool `toml:"-"`
}

// Sandbox is a stdio server's [servers.sandbox]: its grant beyond what
// its entry implies (package sandbox derives that: its command's own
// directories, the directories its arguments name, its roots, the
// runtime's caches, a private temporary directory).
type Sandbox struct {
	// Mode is "auto" (the default: confined where the operating system
	// can, Landlock on Linux) or "off" (the server runs with everything
	// its user may touch, which doctor says loudly).
	Mode string `toml:"mode"`
	// Read and Write are more places the server may read, or read and
	// write: absolute paths, or ~/... in the server's home.
	Read  []string `toml:"read"`
	Write []string `toml:"write"`
	// Network is "auto" (the default: TCP connections to the ports its
	// runtime and profile need, 443, and those in Connect), "none" (no
	// TCP connection or listening socket at all) or "any" (no rule).
	Network string `toml:"network"`
	// Connect and Bind are more TCP ports the server may connect to or
	// listen on (Landlock's rules are by port, on any host).
	Connect []int `toml:"connect"`
	Bind    []int `toml:"bind"`
}

// SandboxModes and SandboxNetworks are the values mode and network take.
var (
	SandboxModes    = []string{"auto", "off"}
	SandboxNetworks = []string{"auto", "none", "any"}
)

// RootPaths are the clean absolute paths of the server's file: roots
// (others name no local place), for judging its path arguments; nil when
// no roots are configured.
func (s Server) RootPaths() []string {
	var out []string
	for _, r := range s.Roots {
		if p := paths.Canonical(r, "", ""); p.OK && strings.HasPrefix(strings.ToLower(r), "file:") {
			out = append(out, p.Clean)
		}
	}
	return out
}

// Label is the server's name for people: its Title where it has one,
// else its Name.
func (s Server) Label() string {
	if s.Title != "" {
		return s.Title
	}
	return s.Name
}
