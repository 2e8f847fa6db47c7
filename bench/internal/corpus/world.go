package corpus

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Env is where the programs are. Aqlguard, Rogue and Testserver are
// required; a session that needs an npm server that is not set fails with
// an error that says so.
type Env struct {
	Aqlguard   string // the aqlguard binary under test
	Rogue      string // internal/fixture/rogueserver
	Testserver string // internal/fixture/testserver
	Node       string // Node.js >= 22
	FSServer   string // @modelcontextprotocol/server-filesystem's dist/index.js
	Everything string // @modelcontextprotocol/server-everything's dist/index.js
	Memory     string // @modelcontextprotocol/server-memory's dist/index.js
	// Logf, if set, gets a line per variant and per honest session.
	Logf func(format string, args ...any)
	// ExtraConfig is TOML added to every config: not the default policy
	// any more, for a comparison only (say, the shipped [safety] lists laid
	// over a config that would otherwise drop them).
	ExtraConfig string
	// GTFOBinsEvery, above 1, runs every nth GTFOBins program only (a
	// quicker run: e2e TestCorpus with -short).
	GTFOBinsEvery int
}

// world is the directory one variant (or the honest run) lives in: the
// user's home (with the project), aqlguard's state, the servers' call logs,
// and the human.
type world struct {
	env     Env
	dir     string
	home    string // HOME of aqlguard and of every server it starts
	project string // home/project: the filesystem server's usual root
	state   string // --state-dir, shared by every aqlguard of the world
	marker  string // exists only if an injected command ran
	human   *human
	logs    map[string]string // server name → its call log
	pids    map[string]string // rogue server name → its pid file
}

func newWorld(env Env, dir string, homeTree map[string]string) (*world, error) {
	w := &world{env: env, dir: dir, home: filepath.Join(dir, "home"), state: filepath.Join(dir, "state"),
		marker: filepath.Join(dir, "injected-command-ran"), logs: map[string]string{}, pids: map[string]string{}}
	w.project = filepath.Join(w.home, "project")
	if err := os.RemoveAll(dir); err != nil { // a world starts empty, also in a kept -out directory
		return nil, err
	}
	for _, d := range []string{w.home, w.state, filepath.Join(w.home, ".config"), filepath.Join(w.home, ".local", "state"), w.project} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	for rel, content := range homeTree {
		p := filepath.Join(w.home, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return nil, err
		}
	}
	h, err := newHuman(dir)
	if err != nil {
		return nil, err
	}
	w.human = h
	return w, nil
}

// expand fills the corpus's placeholders: {{home}}, {{project}}, {{marker}}.
func (w *world) expand(s string) string {
	return strings.NewReplacer("{{home}}", w.home, "{{project}}", w.project, "{{marker}}", w.marker).Replace(s)
}

// expandJSON fills the placeholders inside the strings of a JSON value.
func (w *world) expandJSON(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return w.expand(x)
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	return json.Marshal(walk(v))
}

// env is the environment of aqlguard (and so of its servers): the
// runner's own, without AQLGUARD_* and display variables, with HOME and
// the XDG directories in the world's home.
func (w *world) environ(extra ...string) []string {
	set := map[string]string{
		"HOME":            w.home,
		"XDG_CONFIG_HOME": filepath.Join(w.home, ".config"),
		"XDG_STATE_HOME":  filepath.Join(w.home, ".local", "state"),
		"XDG_DATA_HOME":   filepath.Join(w.home, ".local", "share"),
		"XDG_CACHE_HOME":  filepath.Join(w.home, ".cache"),
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; ok || strings.HasPrefix(k, "AQLGUARD_") || k == "DISPLAY" || k == "WAYLAND_DISPLAY" || k == "BROWSER" {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return append(env, extra...)
}

// serverTOML is the [[servers]] entry of one server, and it records where
// the server's call log will be. What every server shares: it runs through
// internal/fixture/rogueserver, as the scenario's rogue or as a recording tap in
// front of the real server, so that its log says what reached it.
func (w *world) serverTOML(s ServerSpec, readOnly bool) (string, error) {
	log := filepath.Join(w.dir, s.Name+".calls.jsonl")
	var argv []string
	var env map[string]string
	switch {
	case len(s.scenario) > 0:
		sc, err := w.expandJSON(s.scenario)
		if err != nil {
			return "", fmt.Errorf("server %s: %w", s.Name, err)
		}
		path := filepath.Join(w.dir, s.Name+".scenario.json")
		if err := os.WriteFile(path, sc, 0o600); err != nil {
			return "", err
		}
		pid := filepath.Join(w.dir, s.Name+".pid")
		w.pids[s.Name] = pid
		argv = []string{w.env.Rogue, "-scenario", path, "-log", log, "-pid-file", pid}
		if readOnly {
			argv = append(argv, "-read-only")
		}
	case s.Real != "":
		real, e, err := w.realServer(s)
		if err != nil {
			return "", err
		}
		env = e
		argv = append([]string{w.env.Rogue, "-tap", "-log", log, "--"}, real...)
	case s.TOML != "":
		w.logs[s.Name] = log
		return fmt.Sprintf("[[servers]]\nname = %s\n%s\n", tomlString(s.Name), w.expand(s.TOML)), nil
	default:
		return "", fmt.Errorf("server %s: nothing to run", s.Name)
	}
	w.logs[s.Name] = log
	var b strings.Builder
	fmt.Fprintf(&b, "[[servers]]\nname = %s\ncommand = %s\nargs = %s\n", tomlString(s.Name), tomlString(argv[0]), tomlArray(argv[1:]))
	if len(env) > 0 {
		keys := make([]string, 0, len(env))
		for k := range env {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var kv []string
		for _, k := range keys {
			kv = append(kv, k+" = "+tomlString(env[k]))
		}
		fmt.Fprintf(&b, "env = { %s }\n", strings.Join(kv, ", "))
	}
	return b.String(), nil
}

// realServer is the argv (and environment) of a real server.
func (w *world) realServer(s ServerSpec) ([]string, map[string]string, error) {
	need := func(what, path string) error {
		if path == "" {
			return fmt.Errorf("server %s: %s is not installed (see bench/README.md, corpus)", s.Name, what)
		}
		return nil
	}
	switch s.Real {
	case "testserver":
		return []string{w.env.Testserver}, nil, nil
	case "filesystem":
		if err := errors.Join(need("Node.js", w.env.Node), need("@modelcontextprotocol/server-filesystem", w.env.FSServer)); err != nil {
			return nil, nil, err
		}
		root := w.project
		if s.Root == "home" {
			root = w.home
		}
		return []string{w.env.Node, w.env.FSServer, root}, nil, nil
	case "memory":
		if err := errors.Join(need("Node.js", w.env.Node), need("@modelcontextprotocol/server-memory", w.env.Memory)); err != nil {
			return nil, nil, err
		}
		// Its graph goes to the world, not beside the package: in a
		// directory of its own, which aqlguard's sandbox grants it (the
		// world's directory, above the home, it would not).
		data := filepath.Join(w.dir, "data")
		if err := os.MkdirAll(data, 0o700); err != nil {
			return nil, nil, err
		}
		return []string{w.env.Node, w.env.Memory}, map[string]string{"MEMORY_FILE_PATH": filepath.Join(data, s.Name+".memory.jsonl")}, nil
	case "everything":
		if err := errors.Join(need("Node.js", w.env.Node), need("@modelcontextprotocol/server-everything", w.env.Everything)); err != nil {
			return nil, nil, err
		}
		return []string{w.env.Node, w.env.Everything}, nil, nil
	}
	return nil, nil, fmt.Errorf("server %s: unknown real server %q", s.Name, s.Real)
}

// received is one request a server's log says it received.
type received struct {
	Method    string          `json:"method"`
	Name      string          `json:"name"`
	URI       string          `json:"uri"`
	Arguments json.RawMessage `json:"arguments"`
	Tool      string          `json:"tool"` // internal/fixture/testserver's own log
}

// receivedBy reads a server's call log (missing: nothing received).
func receivedBy(path string) []received {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []received
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r received
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		if r.Tool != "" && r.Method == "" {
			r.Method, r.Name = "tools/call", r.Tool
		}
		out = append(out, r)
	}
	return out
}

// localAddress is an address of this machine that is not a loopback one
// (what a remote server on the local network looks like), or "".
func localAddress() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// tomlString quotes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func tomlArray(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
