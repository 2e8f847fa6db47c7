package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/clientconfig"
	"github.com/aqlguard/aqlguard/internal/atomicfile"
	"github.com/aqlguard/aqlguard/store"
	udiff "github.com/aymanbagabas/go-udiff"
)

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

const initUsage = `usage: aqlguard init [--client ID]... [--client-config FILE]... [--project DIR] [--dry-run] [--state-dir DIR]
       aqlguard unwrap [--client ID]... [--client-config FILE]... [--project DIR] [--dry-run] [--force] [--state-dir DIR]

clients: ` + "%s" + `
`

// cmdInit is `aqlguard init` (wrap) and `aqlguard unwrap` (restore).
func cmdInit(verb string, args []string, stdout, stderr io.Writer) int {
	fs, g := newFlags(verb, stderr)
	var clients, files listFlag
	fs.Var(&clients, "client", "a client to edit (repeatable): "+strings.Join(clientconfig.ClientIDs(), ", "))
	fs.Var(&files, "client-config", "a client's config file to edit (repeatable)")
	fs.Var(&files, "file", "the same as --client-config")
	dryRun := fs.Bool("dry-run", false, "show the changes as a diff and change nothing")
	force := fs.Bool("force", false, "unwrap: restore entries edited since they were wrapped")
	project := fs.String("project", "", "the project directory for project-scoped configs (default: the current directory)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, initUsage, strings.Join(clientconfig.ClientIDs(), ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "aqlguard %s: unexpected argument %q\n", verb, fs.Arg(0))
		return 2
	}
	// --config is aqlguard's own config everywhere; here it once named a
	// client's file, and still does, said to be deprecated (init does
	// not read aqlguard's config).
	if g.config != "" {
		fmt.Fprintf(stderr, "aqlguard %s: --config FILE is deprecated for %s: it names aqlguard's own config everywhere else; use --client-config %s\n",
			verb, verb, g.config)
		files = append(files, g.config)
	}
	env := clientconfig.DefaultEnv()
	if *project != "" {
		abs, err := filepath.Abs(*project)
		if err != nil {
			fmt.Fprintf(stderr, "aqlguard: --project: %v\n", err)
			return 2
		}
		env.Project = abs
	}
	for _, c := range clients {
		if _, ok := clientconfig.Lookup(c); !ok {
			fmt.Fprintf(stderr, "aqlguard %s: unknown client %q; known: %s\n", verb, c, strings.Join(clientconfig.ClientIDs(), ", "))
			return 2
		}
	}
	var targets []clientconfig.File
	for _, p := range files {
		client := ""
		if len(clients) == 1 {
			client = clients[0]
		}
		f, ok := clientconfig.ForPath(p, client, env)
		if !ok {
			fmt.Fprintf(stderr, "aqlguard %s: cannot tell which client %s belongs to; say it with --client\n", verb, p)
			return 2
		}
		targets = append(targets, f)
	}
	if len(files) == 0 {
		targets = clientconfig.Detect(env, clients...)
		if len(targets) == 0 {
			fmt.Fprintf(stdout, "no MCP client config found (looked for %s); name one with --client-config FILE\n", strings.Join(clientconfig.ClientIDs(), ", "))
		}
	}

	self, err := selfPath()
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	dir := g.stateDir
	if dir == "" {
		if dir, err = store.DefaultDir(); err != nil {
			fmt.Fprintf(stderr, "aqlguard: %v\n", err)
			return 1
		}
	}
	unlock, err := clientconfig.Lock(dir)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	defer unlock()
	recs, err := clientconfig.LoadRecords(dir)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	failed, refused := false, 0
	for _, f := range targets {
		n, err := editFile(verb, f, self, recs, *dryRun, *force, stdout)
		if err != nil {
			fmt.Fprintf(stderr, "aqlguard %s: %s: %v\n", verb, f.Path, err)
			failed = true
		}
		refused += n
	}
	if len(files) == 0 {
		// The clients' own tools: their hooks (user scope), for every
		// client found (its settings directory exists).
		for _, hf := range clientconfig.HookFiles(env) {
			if len(clients) > 0 && !slices.Contains(clients, hf.Client) {
				continue
			}
			if _, err := os.Stat(filepath.Dir(hf.Path)); err != nil {
				continue
			}
			if err := editHooks(verb, hf, self, recs, *dryRun, stdout); err != nil {
				fmt.Fprintf(stderr, "aqlguard %s: %s: %v\n", verb, hf.Path, err)
				failed = true
			}
		}
	}
	if refused > 0 {
		// The rest is restored; these are not, and a script must know.
		fmt.Fprintf(stderr, "aqlguard unwrap: %d entry(ies) edited since they were wrapped were left as they are (see above; --force restores them)\n", refused)
	}
	if failed || refused > 0 {
		return 1
	}
	return 0
}

// editFile wraps or unwraps one file: a diff for --dry-run, else a backup
// and an atomic write, then the records. It returns how many entries
// unwrap refused.
func editFile(verb string, f clientconfig.File, self string, recs *clientconfig.Records, dryRun, force bool, stdout io.Writer) (int, error) {
	refused := 0
	info, err := os.Stat(f.Path)
	if err != nil {
		return 0, err
	}
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return 0, err
	}
	var out []byte
	var results []clientconfig.Result
	if verb == "unwrap" {
		out, results, err = clientconfig.Unwrap(f, data, recs, force)
	} else {
		out, results, err = clientconfig.Wrap(f, data, self, recs, time.Now())
	}
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(stdout, "%s (%s, %s):\n", f.Path, f.Client, f.Scope)
	if len(results) == 0 {
		fmt.Fprintln(stdout, "  no servers")
	}
	for _, r := range results {
		action := r.Action
		if dryRun && (action == "wrapped" || action == "restored") {
			action = "would be " + action
		}
		line := "  " + r.Entry + ": " + action
		if r.Why != "" {
			line += " (" + r.Why + ")"
		}
		fmt.Fprintln(stdout, line)
		if r.Action == "refused" {
			refused++
		}
		for _, l := range strings.SplitAfter(strings.TrimSuffix(r.Diff, "\n"), "\n") {
			if l != "" {
				fmt.Fprint(stdout, "      "+strings.TrimSuffix(l, "\n")+"\n")
			}
		}
	}
	return refused, writeEdit(verb, f.Path, data, out, info.Mode().Perm(), true, recs, dryRun, stdout)
}

// writeEdit puts out in place of data at path (out nil: removes the file
// init created): "unchanged" when they are the same, a diff for
// --dry-run, else a backup of what was there (existed), the records and
// an atomic write. The originals must never be lost: init saves the
// records before the file is changed, unwrap forgets them only after.
func writeEdit(verb, path string, data, out []byte, perm os.FileMode, existed bool, recs *clientconfig.Records, dryRun bool, stdout io.Writer) error {
	if out != nil && string(out) == string(data) {
		fmt.Fprintln(stdout, "  unchanged")
		return nil
	}
	if dryRun {
		fmt.Fprint(stdout, udiff.Unified(path, path+" ("+verb+")", string(data), string(out)))
		return nil
	}
	done, kept := "  written (a new file)", ""
	if existed {
		backup, err := writeBackup(path, data, perm)
		if err != nil {
			return fmt.Errorf("writing the backup: %w", err)
		}
		done, kept = "  written (backup "+backup+")", "; backup "+backup
		if out == nil {
			done = "  removed, as init created it (backup " + backup + ")"
		}
	}
	if verb != "unwrap" {
		if err := recs.Save(); err != nil {
			return fmt.Errorf("saving the originals: %w (the file is unchanged)", err)
		}
	}
	var err error
	if out == nil {
		err = os.Remove(path)
	} else {
		err = atomicfile.Write(path, out, perm)
	}
	if err != nil {
		return fmt.Errorf("writing: %w (the file is unchanged%s)", err, kept)
	}
	if verb == "unwrap" {
		if err := recs.Save(); err != nil {
			return fmt.Errorf("the file is restored, but its records could not be updated: %w", err)
		}
	}
	fmt.Fprintln(stdout, done)
	return nil
}

// selfPath is the absolute path of this aqlguard binary, symlinks
// resolved: what a GUI client, which does not see the shell's PATH, can
// start.
func selfPath() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding this program's path: %w", err)
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("this program's path %s does not exist (go run?); install aqlguard first (go install ./cmd/aqlguard)", p)
	}
	return filepath.Abs(p)
}

// writeBackup saves data beside path under a timestamped name never used
// before (two runs in one second must not overwrite each other's backup).
func writeBackup(path string, data []byte, mode fs.FileMode) (string, error) {
	base := path + ".aqlguard-backup-" + time.Now().UTC().Format("20060102T150405Z")
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return "", err
		}
		return name, f.Close()
	}
}

// editHooks installs (init) or removes (unwrap) the client's hook in one
// settings file: a diff for --dry-run, else a backup, the records and an
// atomic write, as editFile does for server entries.
func editHooks(verb string, f clientconfig.HookFile, self string, recs *clientconfig.Records, dryRun bool, stdout io.Writer) error {
	data, err := os.ReadFile(f.Path)
	exists := err == nil
	switch {
	case errors.Is(err, fs.ErrNotExist) && verb == "unwrap":
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	var out []byte
	var results []clientconfig.Result
	if verb == "unwrap" {
		out, results, err = clientconfig.RemoveHooks(f, data, self, recs)
	} else {
		out, results, err = clientconfig.InstallHooks(f, data, self, recs, time.Now())
	}
	if err != nil {
		return err
	}
	if len(results) == 0 {
		return nil
	}
	remove := verb == "unwrap" && clientconfig.CreatedEmpty(f, out, self, recs)
	fmt.Fprintf(stdout, "%s (%s hooks, user):\n", f.Path, f.Client)
	for _, r := range results {
		action := r.Action
		if dryRun && (action == "hook installed" || action == "hook removed") {
			action = "would be " + strings.TrimPrefix(action, "hook ")
		}
		fmt.Fprintf(stdout, "  %s: %s\n", r.Entry, action)
	}
	if string(out) == string(data) {
		fmt.Fprintln(stdout, "  unchanged")
		return nil
	}
	if remove {
		out = nil // init created the file, and nothing else is in it
	}
	perm := os.FileMode(0o600)
	if exists {
		info, err := os.Stat(f.Path)
		if err != nil {
			return err
		}
		perm = info.Mode().Perm()
	}
	return writeEdit(verb, f.Path, data, out, perm, exists, recs, dryRun, stdout)
}
