package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/internal/atomicfile"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/clientauth"
)

const serveTokenUsage = `usage: aqlguard serve token add NAME [--agent PRINCIPAL] [--config FILE]
       aqlguard serve token list [--config FILE]
       aqlguard serve token revoke NAME [--config FILE]
`

// cmdServeToken manages [[serve.clients]]: add makes a token, shows it
// once and writes only its SHA-256 to the config file; revoke takes the
// entry out. A running serve reloads the file within seconds, so a
// revoked token is refused without a restart.
func cmdServeToken(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, serveTokenUsage)
		return 2
	}
	verb := args[0]
	fset, g := newFlags("serve token "+verb, stderr)
	fset.Usage = func() { fmt.Fprint(stderr, serveTokenUsage); fset.PrintDefaults() }
	// NAME may come before or after the flags.
	rest := args[1:]
	var name string
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		name, rest = rest[0], rest[1:]
	}
	if err := fset.Parse(rest); err != nil {
		return 2
	}
	if name == "" && fset.NArg() > 0 {
		name = fset.Arg(0)
	} else if fset.NArg() > 0 {
		fmt.Fprintf(stderr, "aqlguard serve token %s: unexpected %q\n", verb, fset.Arg(0))
		return 2
	}
	agent := g.agent // add: the principal the client's calls belong to (default NAME)
	path := g.config
	if path == "" {
		path = defaultConfigPath()
	}
	switch verb {
	case "list":
		return serveTokenList(g, stdout, stderr)
	case "add", "revoke":
		if name == "" {
			fmt.Fprintf(stderr, "aqlguard serve token %s: name the client\n%s", verb, serveTokenUsage)
			return 2
		}
		var err error
		if verb == "add" {
			err = serveTokenAdd(path, name, agent, stdout)
		} else {
			err = serveTokenRevoke(path, name, stdout)
		}
		if err != nil {
			fmt.Fprintf(stderr, "aqlguard serve token %s: %v\n", verb, err)
			return 1
		}
		if cfg, err := loadConfig(g); err == nil && cfg.Managed != nil {
			for _, e := range cfg.NotInEffect {
				if strings.HasPrefix(e.Key, "serve.clients") {
					fmt.Fprintf(stderr, "warning: the managed policy %s fixes [[serve.clients]]: this change is not in effect\n", cfg.Managed.Path)
					return 1
				}
			}
		}
		return 0
	}
	fmt.Fprintf(stderr, "aqlguard serve token: unknown verb %q\n%s", verb, serveTokenUsage)
	return 2
}

func serveTokenList(g *globals, stdout, stderr io.Writer) int {
	cfg, err := loadConfig(g)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard serve token list: %v\n", err)
		return 1
	}
	if len(cfg.Serve.Clients) == 0 {
		fmt.Fprintln(stdout, "no clients in [[serve.clients]]; add one with `aqlguard serve token add NAME`")
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPRINCIPAL\tCREATED\tTOKEN SHA-256")
	for _, c := range cfg.Serve.Clients {
		p := c.Agent
		if p == "" {
			p = c.Name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s…\n", c.Name, p, c.Created, c.TokenSHA256[:12])
	}
	_ = tw.Flush()
	return 0
}

// serveTokenAdd appends a [[serve.clients]] entry to the config file (the
// rest of the file, comments included, as it was) and shows the token.
func serveTokenAdd(path, name, agent string, stdout io.Writer) error {
	old, mode, err := readConfigText(path)
	if err != nil {
		return err
	}
	if len(old) > 0 {
		if cur, err := policy.Load(path); err == nil {
			for _, c := range cur.Serve.Clients {
				if c.Name == name {
					return fmt.Errorf("client %q is already in %s; revoke it first to give it a new token", name, path)
				}
			}
		}
	}
	token, digest := clientauth.NewToken()
	var b bytes.Buffer
	b.Write(old)
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "\n[[serve.clients]]\nname = %q\n", name)
	if agent != "" {
		fmt.Fprintf(&b, "agent = %q\n", agent)
	}
	fmt.Fprintf(&b, "token_sha256 = %q\ncreated = %q\n", digest, time.Now().UTC().Format(time.RFC3339))
	if _, _, err := rewriteConfig(path, old, b.Bytes(), mode, func(before, after []config.ServeClient) error {
		if len(after) != len(before)+1 || after[len(after)-1].Name != name {
			return fmt.Errorf("%s was left unchanged: the entry did not read back as client %q", path, name)
		}
		return nil
	}); err != nil {
		return err
	}
	who := name
	if agent != "" {
		who = agent
	}
	fmt.Fprintf(stdout, "client %q added to %s (principal %q).\n\n%s\n\n"+
		"This token is shown once; only its SHA-256 is kept. Give it to the client as\n"+
		"  Authorization: Bearer <token>\n"+
		"A running `aqlguard serve` accepts it within seconds (it reloads the file).\n", name, path, who, token)
	return nil
}

var clientNameLine = regexp.MustCompile(`^\s*name\s*=\s*("(?:[^"\\]|\\.)*"|'[^']*')\s*(#.*)?$`)

// serveTokenRevoke takes the [[serve.clients]] entry named name out of
// the config file: the lines from its header to the next table. The file
// is written only if what it then says is exactly the old configuration
// without that client.
func serveTokenRevoke(path, name string, stdout io.Writer) error {
	old, mode, err := readConfigText(path)
	if err != nil {
		return err
	}
	next, err := cutClient(string(old), name)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, _, err := rewriteConfig(path, old, []byte(next), mode, func(before, after []config.ServeClient) error {
		want := make([]config.ServeClient, 0, len(before))
		for _, c := range before {
			if c.Name != name {
				want = append(want, c)
			}
		}
		if len(want) == len(before) || !slices.Equal(want, after) {
			return fmt.Errorf("taking client %q out of %s would change other clients; edit it by hand", name, path)
		}
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "client %q revoked in %s: a running `aqlguard serve` refuses its token within seconds (it reloads the file).\n", name, path)
	return nil
}

// cutClient is text without the lines of the [[serve.clients]] table
// named name: from its header to the next table's.
func cutClient(text, name string) (string, error) {
	lines := strings.SplitAfter(text, "\n")
	start, end := -1, -1
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(stripComment(lines[i])) != "[[serve.clients]]" {
			continue
		}
		j := i + 1
		match := false
		for ; j < len(lines); j++ {
			if strings.HasPrefix(strings.TrimSpace(lines[j]), "[") {
				break
			}
			if m := clientNameLine.FindStringSubmatch(strings.TrimRight(lines[j], "\r\n")); m != nil && unquote(m[1]) == name {
				match = true
			}
		}
		if match {
			if start >= 0 {
				return "", fmt.Errorf("client %q is named twice; edit the file by hand", name)
			}
			start, end = i, j
		}
		i = j - 1
	}
	if start < 0 {
		return "", fmt.Errorf("no client %q (`aqlguard serve token list` shows them)", name)
	}
	return strings.Join(lines[:start], "") + strings.Join(lines[end:], ""), nil
}

func stripComment(line string) string {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		return line[:i]
	}
	return line
}

func unquote(s string) string {
	if strings.HasPrefix(s, "'") {
		return strings.Trim(s, "'")
	}
	var out string
	if _, err := fmt.Sscanf(s, "%q", &out); err != nil {
		return s
	}
	return out
}

// readConfigText reads the config file as text (nothing when it does not
// exist yet) and its mode.
func readConfigText(path string) ([]byte, fs.FileMode, error) {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, 0o600, nil
	case err != nil:
		return nil, 0, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	return data, fi.Mode().Perm(), nil
}

// rewriteConfig writes next in place of old (atomically, same mode,
// owner and group)
// after checking that it loads, says what old said but for
// [[serve.clients]], and that check accepts the clients before and after.
func rewriteConfig(path string, old, next []byte, mode fs.FileMode, check func(before, after []config.ServeClient) error) (before, after []config.ServeClient, err error) {
	before, after, err = checkEdit(path, old, next)
	if err == nil {
		err = check(before, after)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, err
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return before, after, atomicfile.Write(path, next, mode)
	case err != nil:
		return nil, nil, err
	}
	return before, after, atomicfile.WriteLike(path, next, mode, fi)
}

// checkEdit parses old and next (the file at path before and after an
// edit) and returns their clients, or why next must not be written: it
// does not load, or it changes more than [[serve.clients]].
func checkEdit(path string, old, next []byte) (before, after []config.ServeClient, err error) {
	nc, err := policy.Parse(next, path)
	if err != nil {
		return nil, nil, fmt.Errorf("the changed file would not load, so %s was left unchanged: %w", path, err)
	}
	after = nc.Serve.Clients
	if len(old) == 0 {
		return nil, after, nil
	}
	oc, err := policy.Parse(old, path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s does not load as it is; fix it first: %w", path, err)
	}
	before = oc.Serve.Clients
	a, b := *oc, *nc
	a.Serve.Clients, b.Serve.Clients = nil, nil
	if !sameSettings(a, b) {
		return nil, nil, fmt.Errorf("the change would touch more than [[serve.clients]], so %s was left unchanged; edit it by hand", path)
	}
	return before, after, nil
}

// sameSettings compares the exported settings of two configurations.
func sameSettings(a, b config.Config) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		if va.Type().Field(i).IsExported() && !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			return false
		}
	}
	return true
}
