// Command profile makes the shipped profiles' definitions from the real
// servers, so that no definition is typed by hand.
//
//	profile capture -name NAME -package PKG -version V [-env K=V]... -- COMMAND [ARG]...
//
// starts COMMAND, a stdio MCP server, initializes it, pages through
// tools/list and writes every tool exactly as the server sent it to
// effects/profiles/testdata/NAME.tools.json, with where it came from
// (package, version, command, date).
//
//	profile definitions [NAME]...
//
// sets each profile's definitions (effects/profiles/NAME.json) to the
// MatchKeys of its capture's tools, and its package, version and
// made_from to the capture's. It refuses a profile that lacks a captured
// tool or has one the capture lacks, and with -new writes the missing
// tools as stubs (effects "unknown", why "TODO") for a person to read
// the server's source and fill in.
//
//	profile capture-python -name NAME -package PKG -version V -repo GITDIR -repo-name OWNER/NAME -commit REV -path SRC_DIR
//
// writes the capture of a Python server (fetch, git, time, sqlite), which
// cannot be installed here, from its published source: the server's
// package at REV is run by pycapture.py under the local Python and its
// pydantic v2 far enough to list its tools (the capture's source and
// commit say which). definitions treats these captures like the others.
//
// capture-all.sh beside this file is every command that made the shipped
// captures.
package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/effects"
	"github.com/aqlguard/aqlguard/effects/cmd/profile/capture"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "capture":
		err = captureMain(os.Args[2:])
	case "capture-python":
		err = capturePythonMain(os.Args[2:])
	case "definitions":
		err = definitionsMain(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage:
  profile capture -name NAME -package PKG -version V [-env K=V]... -- COMMAND [ARG]...
  profile capture-python -name NAME -package PKG -version V -repo GITDIR -repo-name OWNER/NAME -commit REV -path SRC_DIR
  profile definitions [-dir DIR] [-new] [NAME]...
(run from the repository's root; -h after a mode lists its flags)`)
	os.Exit(2)
}

// multi is a repeatable flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func captureMain(args []string) error {
	fs := flag.NewFlagSet("capture", flag.ExitOnError)
	name := fs.String("name", "", "the profile's name (the capture is DIR/testdata/NAME.tools.json)")
	pkg := fs.String("package", "", "the server's package")
	version := fs.String("version", "", "the package's version")
	dir := fs.String("dir", "effects/profiles", "the profiles' directory")
	caps := fs.String("capabilities", capture.AllCapabilities, "the client capabilities initialize declares (JSON)")
	note := fs.String("note", "", "added to made_from (how a server that needs a token or a database was started)")
	timeout := fs.Duration("timeout", time.Minute, "how long the server has to answer")
	var env, shownAs multi
	fs.Var(&env, "env", "KEY=VALUE added to the server's environment (repeatable)")
	fs.Var(&shownAs, "shown-as", "TEXT=SHOWN: write TEXT of the command line as SHOWN in the capture (a temporary directory; repeatable)")
	_ = fs.Parse(args)
	argv := fs.Args()
	if *name == "" || *pkg == "" || *version == "" || len(argv) == 0 {
		return errors.New("capture needs -name, -package, -version and a command after --")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	c, err := capture.ListTools(ctx, argv, env, json.RawMessage(*caps))
	if err != nil {
		return err
	}
	c.Name, c.Package, c.Version = *name, *pkg, *version
	c.Command = shownCommand(argv)
	for _, r := range shownAs {
		text, shown, _ := strings.Cut(r, "=")
		for i := range c.Command {
			c.Command[i] = strings.ReplaceAll(c.Command[i], text, shown)
		}
	}
	if filepath.Base(argv[0]) == "node" {
		if out, err := exec.Command(argv[0], "--version").Output(); err == nil {
			c.Runtime = "node " + strings.TrimSpace(string(out))
		}
	}
	c.Date = time.Now().UTC().Format("2006-01-02")
	c.MadeFrom = fmt.Sprintf("tools/list of %s %s, installed from npm and run here (%s)", *pkg, *version, strings.Join(c.Command, " "))
	if *note != "" {
		c.MadeFrom += "; " + *note
	}
	out := filepath.Join(*dir, "testdata", *name+".tools.json")
	if err := writeJSON(out, c); err != nil {
		return err
	}
	fmt.Printf("%s: %d tools\n", out, len(c.Tools))
	return nil
}

// pycapture is the Python that runs a Python server's source far enough
// to list its tools (its comment says how).
//
//go:embed pycapture.py
var pycapture []byte

func capturePythonMain(args []string) error {
	fs := flag.NewFlagSet("capture-python", flag.ExitOnError)
	name := fs.String("name", "", "the profile's name; also the server's (mcp_server_NAME)")
	pkg := fs.String("package", "", "the server's package (PyPI)")
	version := fs.String("version", "", "the release the source is of")
	dir := fs.String("dir", "effects/profiles", "the profiles' directory")
	repo := fs.String("repo", "", "a git directory of the server's repository")
	repoName := fs.String("repo-name", "", "the repository's owner/name, for the capture")
	commit := fs.String("commit", "", "the commit to read")
	src := fs.String("path", "", "the directory in the repository that holds the package (src/fetch/src)")
	note := fs.String("note", "", "added to made_from")
	python := fs.String("python", "python3", "a Python 3 with pydantic v2")
	_ = fs.Parse(args)
	if *name == "" || *pkg == "" || *version == "" || *repo == "" || *repoName == "" || *commit == "" || *src == "" {
		return errors.New("capture-python needs -name, -package, -version, -repo, -repo-name, -commit and -path")
	}
	sha, err := exec.Command("git", "-C", *repo, "rev-parse", "--verify", *commit+"^{commit}").Output()
	if err != nil {
		return fmt.Errorf("git rev-parse %s: %w", *commit, err)
	}
	tmp, err := os.MkdirTemp("", "profile-python-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	archive := exec.Command("git", "-C", *repo, "archive", strings.TrimSpace(string(sha)), *src)
	untar := exec.Command("tar", "-x", "-C", tmp)
	untar.Stdin, _ = archive.StdoutPipe()
	if err := untar.Start(); err != nil {
		return err
	}
	if err := archive.Run(); err != nil {
		return fmt.Errorf("git archive: %w", err)
	}
	if err := untar.Wait(); err != nil {
		return fmt.Errorf("tar: %w", err)
	}
	script := filepath.Join(tmp, "pycapture.py")
	if err := os.WriteFile(script, pycapture, 0o644); err != nil {
		return err
	}
	cmd := exec.Command(*python, script, *name, filepath.Join(tmp, *src))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s pycapture.py: %w", *python, err)
	}
	var res struct {
		Tools    []json.RawMessage `json:"tools"`
		Pydantic string            `json:"pydantic"`
		Python   string            `json:"python"`
		Vary     *capture.Vary     `json:"vary"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("pycapture.py's answer: %w", err)
	}
	module := "mcp_server_" + *name
	c := &capture.Capture{
		Name: *name, Package: *pkg, Version: *version,
		Source:  path.Join(*src, module, "server.py"),
		Commit:  *repoName + "@" + strings.TrimSpace(string(sha)),
		Runtime: "python " + res.Python + ", pydantic " + res.Pydantic,
		Date:    time.Now().UTC().Format("2006-01-02"),
		Tools:   res.Tools,
		Vary:    res.Vary,
	}
	c.MadeFrom = fmt.Sprintf("the published source of %s %s: %s at %s, its list_tools run under Python %s and pydantic %s "+
		"(effects/cmd/profile/pycapture.py; the MCP SDK's Tool stood in for, dumped as the SDK sends it)",
		*pkg, *version, c.Source, c.Commit, res.Python, res.Pydantic)
	if *note != "" {
		c.MadeFrom += "; " + *note
	}
	outPath := filepath.Join(*dir, "testdata", *name+".tools.json")
	if err := writeJSON(outPath, c); err != nil {
		return err
	}
	fmt.Printf("%s: %d tools\n", outPath, len(c.Tools))
	return nil
}

// shownCommand is argv as the capture records it: the node binary by its
// name, and paths inside an npm prefix from node_modules/ on, so the
// capture says what ran without naming this machine's directories.
func shownCommand(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		switch {
		case i == 0 && filepath.Base(a) == "node":
			a = "node"
		case strings.Contains(a, "/node_modules/"):
			a = a[strings.Index(a, "/node_modules/")+1:]
		}
		out[i] = a
	}
	return out
}

func definitionsMain(args []string) error {
	fs := flag.NewFlagSet("definitions", flag.ExitOnError)
	dir := fs.String("dir", "effects/profiles", "the profiles' directory")
	stubs := fs.Bool("new", false, "write captured tools the profile lacks as stubs (and a profile that does not exist yet)")
	_ = fs.Parse(args)
	names := fs.Args()
	if len(names) == 0 {
		captures, err := filepath.Glob(filepath.Join(*dir, "testdata", "*.tools.json"))
		if err != nil {
			return err
		}
		for _, c := range captures {
			names = append(names, strings.TrimSuffix(filepath.Base(c), ".tools.json"))
		}
	}
	var errs []error
	for _, name := range names {
		if err := fillDefinitions(*dir, name, *stubs); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// fillDefinitions sets the definitions of profile name from its capture.
func fillDefinitions(dir, name string, stubs bool) error {
	c, err := capture.Read(filepath.Join(dir, "testdata", name+".tools.json"))
	if err != nil {
		return err
	}
	keys, err := c.MatchKeys()
	if err != nil {
		return err
	}
	path := filepath.Join(dir, name+".json")
	var p effects.Profile
	if err := readJSON(path, &p); err != nil {
		if !stubs || !errors.Is(err, os.ErrNotExist) {
			return err
		}
		p.Name = name
	}
	if p.Tools == nil {
		p.Tools = map[string]effects.ProfileTool{}
	}
	var missing, extra []string
	for tool, key := range keys {
		t, ok := p.Tools[tool]
		if !ok {
			if !stubs {
				missing = append(missing, tool)
				continue
			}
			t = effects.ProfileTool{Effects: "unknown", Why: "TODO"}
		}
		t.Definitions = key
		p.Tools[tool] = t
	}
	for tool := range p.Tools {
		if _, ok := keys[tool]; !ok {
			extra = append(extra, tool)
		}
	}
	if len(missing)+len(extra) > 0 {
		sort.Strings(missing)
		sort.Strings(extra)
		return fmt.Errorf("the profile lacks captured tools %v and has tools the capture lacks %v (-new writes stubs for the first)", missing, extra)
	}
	p.Package, p.Version, p.MadeFrom = c.Package, c.Version, c.MadeFrom
	if err := writeJSON(path, &p); err != nil {
		return err
	}
	fmt.Printf("%s: %d tools\n", path, len(keys))
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeJSON writes v indented, without escaping <, > and & (tool
// descriptions hold them; the raw definitions keep their bytes, only
// whitespace between tokens changes).
func writeJSON(path string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
