package policy

import (
	"errors"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/aqlguard/aqlguard/config"
)

// ServerNameFrom derives a valid server name (^[a-z][a-z0-9]{0,31}$) from
// any name a client config gives a server ("github-mcp", "My Server!",
// "@scope/pkg"): lower case, letters and digits only, a leading "s" when
// it would start with a digit, "server" when nothing is left. The same
// input always gives the same name.
func ServerNameFrom(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	n := b.String()
	switch {
	case n == "":
		n = "server"
	case n[0] >= '0' && n[0] <= '9':
		n = "s" + n
	}
	if len(n) > 32 {
		n = n[:32]
	}
	return n
}

// Wrap turns base into the configuration of `aqlguard wrap`: base's policy,
// human channel, limits and state, guarding the one stdio server argv
// (command and arguments) named name, in transparent mode. base is not
// modified.
func Wrap(base *config.Config, name string, argv []string) (*config.Config, error) {
	if len(argv) == 0 || strings.TrimSpace(argv[0]) == "" {
		return nil, errors.New("no command to wrap: give it after --, e.g. aqlguard wrap -- npx -y @modelcontextprotocol/server-filesystem ~/projects")
	}
	if name == "" {
		name = filepath.Base(argv[0])
	}
	cfg := *base
	cfg.Mode = "transparent"
	cfg.Servers = []config.Server{WrappedServer(base, name, argv)}
	v := &validator{file: cfg.Path}
	v.servers(cfg.Servers)
	if len(v.errs) > 0 {
		return nil, v.errs
	}
	return &cfg, nil
}

// WrappedServer is the server `aqlguard wrap --name NAME -- ARGV` runs
// on base (nil: no config): its name and title from name, and the
// sandbox of base's stdio entry of that name, which is what `aqlguard
// sandbox grant` writes. Wrap's, and doctor's for the entries init wrote.
func WrappedServer(base *config.Config, name string, argv []string) config.Server {
	s := config.Server{Name: ServerNameFrom(name), Title: title(name), Command: argv[0], Args: append([]string(nil), argv[1:]...)}
	if base == nil {
		return s
	}
	for _, c := range base.Servers {
		if c.Name == s.Name && c.Command != "" {
			s.Sandbox = c.Sandbox
		}
	}
	return s
}

// WrapRemote is the configuration of `aqlguard wrap --url URL`: base's
// policy in transparent mode with one remote server, authorized as auth
// says ("oauth" or "none") and sent headers with every request.
func WrapRemote(base *config.Config, name, url, auth string, headers map[string]string) (*config.Config, error) {
	if name == "" {
		return nil, errors.New("wrap --url needs --name: the server's name")
	}
	cfg := *base
	cfg.Mode = "transparent"
	cfg.Servers = []config.Server{{Name: ServerNameFrom(name), Title: title(name), URL: url, Auth: auth, Headers: headers}}
	v := &validator{file: cfg.Path}
	v.servers(cfg.Servers)
	if len(v.errs) > 0 {
		return nil, v.errs
	}
	return &cfg, nil
}

// title is the name wrap was given, kept for messages and logs when the
// server's name had to drop some of it (hyphens, capitals): "" when it
// is the name already, or holds what a log line must not (a control
// character, a quote) or is longer than a name may be written.
func title(name string) string {
	if name == ServerNameFrom(name) || len(name) > 64 {
		return ""
	}
	for _, r := range name {
		if r < ' ' || r == 0x7f || r == '"' || r == '\\' || !unicode.IsPrint(r) {
			return ""
		}
	}
	return name
}
