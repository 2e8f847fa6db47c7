package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aqlguard/aqlguard/internal/atomicfile"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/sandbox"
)

// cmdSandbox is `aqlguard sandbox show [SERVER]` (what each stdio
// server is confined to, and what this machine enforces of it) and
// `aqlguard sandbox grant SERVER PATH|PORT [--read]` (adds to the
// server's [servers.sandbox] in the config file, comments kept).
func cmdSandbox(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, sandboxUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	switch args[0] {
	case "show":
		return sandboxShow(args[1:], stdout, stderr)
	case "grant":
		return sandboxGrant(args[1:], stdout, stderr)
	}
	fmt.Fprint(stderr, sandboxUsage)
	return 2
}

const sandboxUsage = `usage: aqlguard sandbox show [SERVER]
       aqlguard sandbox grant SERVER PATH [--read]   let the server write PATH (read it only, with --read)
       aqlguard sandbox grant SERVER PORT            let the server connect to the TCP port PORT
`

func sandboxShow(args []string, stdout, stderr io.Writer) int {
	flags, g := newFlags("sandbox show", stderr)
	if err := flags.Parse(args); err != nil {
		return 2
	}
	cfg, err := loadConfig(g)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	only := flags.Arg(0)
	e := sandbox.Support()
	fmt.Fprintf(stdout, "this machine: %s\n", e)
	shown := 0
	for _, s := range cfg.Servers {
		if s.Command == "" || (only != "" && s.Name != only) {
			continue
		}
		shown++
		gr := sandbox.Derive(s, sandbox.CurrentEnv(s))
		fmt.Fprintf(stdout, "\n%s: %s\n", s.Name, gr.Summary())
		if gr.Profile != "" {
			fmt.Fprintf(stdout, "  shipped profile: %s\n", gr.Profile)
		}
		for _, n := range gr.Notes {
			fmt.Fprintf(stdout, "  not granted: %s\n", n)
		}
		fmt.Fprintln(stdout, "  and a private temporary directory (TMPDIR), made at each start")
	}
	if only != "" && shown == 0 {
		fmt.Fprintf(stderr, "aqlguard sandbox show: %s has no stdio server named %q\n", source(cfg), only)
		return 1
	}
	return 0
}

func sandboxGrant(args []string, stdout, stderr io.Writer) int {
	flags, g := newFlags("sandbox grant", stderr)
	read := flags.Bool("read", false, "grant reading only")
	// The flags may come after the words: aqlguard sandbox grant fs ~/x --read.
	var words []string
	for len(args) > 0 {
		if err := flags.Parse(args); err != nil {
			return 2
		}
		if flags.NArg() == 0 {
			break
		}
		words, args = append(words, flags.Arg(0)), flags.Args()[1:]
	}
	if len(words) != 2 {
		fmt.Fprint(stderr, sandboxUsage)
		return 2
	}
	server, what := words[0], words[1]
	path := g.config
	if path == "" {
		path = defaultConfigPath()
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "aqlguard sandbox grant: there is no config file at %s to add the grant to; write one (config.example.toml shows every key) with an entry for %s, or give --config FILE\n", path, server)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard sandbox grant: %v\n", err)
		return 1
	}
	key, value, err := grantValue(what, *read)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard sandbox grant: %v\n", err)
		return 2
	}
	out, err := policy.AddToSandbox(data, server, key, value)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard sandbox grant: %s: %v\n", path, err)
		if strings.Contains(err.Error(), "no [[servers]] entry") {
			fmt.Fprintf(stderr, "A server your client runs through `aqlguard wrap --name %s` takes its sandbox from the config's [[servers]] entry of that name: add one (name, command, args as the client has them) with\n[servers.sandbox]\n%s = [%s]\n", server, key, tomlValue(value))
		}
		return 1
	}
	info, err := os.Stat(path)
	if err == nil {
		err = atomicfile.WriteLike(path, out, info.Mode().Perm(), info)
	}
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard sandbox grant: writing %s: %v\n", path, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: the server %s may now %s %v ([servers.sandbox] %s); it takes effect when the server starts again (restart your MCP client)\n",
		path, server, map[string]string{"read": "read", "write": "read and write", "connect": "connect to the TCP port"}[key], value, key)
	return 0
}

// grantValue reads what is granted: a TCP port (digits), or a path made
// absolute ("~/..." stays: the server's home).
func grantValue(what string, readOnly bool) (key string, value any, err error) {
	if n, err := strconv.Atoi(what); err == nil {
		if n < 1 || n > 65535 || readOnly {
			return "", nil, fmt.Errorf("%q: a port is 1-65535, and --read does not apply to it", what)
		}
		return "connect", n, nil
	}
	p := what
	if p != "~" && !strings.HasPrefix(p, "~/") {
		if p, err = filepath.Abs(p); err != nil {
			return "", nil, err
		}
	}
	if readOnly {
		return "read", p, nil
	}
	return "write", p, nil
}

func tomlValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}
