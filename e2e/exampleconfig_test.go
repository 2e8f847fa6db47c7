package e2e

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExampleConfigIsSafeToCopy (issue 31, item 5): config.example.toml
// copied as its header says, into a HOME of its own, passes policy
// check (as the defaults it is), and a start of aqlguard on it (as a
// client starts it: run, stdin closed at once) creates nothing but the
// state directory the user chose: the default one, or --state-dir.
// Nothing of alice's (her home, her state directory) is touched.
func TestExampleConfigIsSafeToCopy(t *testing.T) {
	_, aliceBefore := os.Stat("/home/alice")
	for _, tt := range []struct {
		name     string
		stateDir func(root, home string) string // what the user chose
		args     []string
	}{
		{"the default state directory", func(_, home string) string { return filepath.Join(home, ".local", "state", "aqlguard") }, nil},
		{"--state-dir", func(root, _ string) string { return filepath.Join(root, "chosen") }, []string{"--state-dir", "CHOSEN"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			env := isolatedEnv(t, root)
			home := filepath.Join(root, "home")
			example, err := os.ReadFile("../config.example.toml")
			if err != nil {
				t.Fatal(err)
			}
			config := filepath.Join(home, ".config", "aqlguard", "config.toml")
			if err := os.MkdirAll(filepath.Dir(config), 0o700); err != nil {
				t.Fatal(err)
			}
			writeFile(t, config, string(example))
			before := pathsUnder(t, root)
			chosen := tt.stateDir(root, home)
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = strings.ReplaceAll(a, "CHOSEN", chosen)
			}

			check := exec.Command(bins.aqlguard, append([]string{"policy", "check"}, args...)...)
			check.Env, check.Dir = env, root
			out, err := check.CombinedOutput()
			if err != nil || !strings.Contains(string(out), config+": OK") {
				t.Fatalf("policy check on the copied example: %v\n%s", err, out)
			}
			start := exec.Command(bins.aqlguard, append([]string{"run"}, args...)...)
			start.Env, start.Dir, start.Stdin = env, root, bytes.NewReader(nil)
			if out, err := start.CombinedOutput(); err != nil {
				t.Fatalf("aqlguard run on the copied example: %v\n%s", err, out)
			}
			for p := range pathsUnder(t, root) {
				if !before[p] && p != chosen && !strings.HasPrefix(p, chosen+string(filepath.Separator)) {
					t.Errorf("made outside the chosen state directory %s: %s", chosen, p)
				}
			}
			if _, err := os.Stat(chosen); err != nil {
				t.Errorf("the chosen state directory was not used: %v", err)
			}
		})
	}
	if _, err := os.Stat("/home/alice"); err == nil && aliceBefore != nil {
		t.Error("/home/alice was created")
	}
}

// pathsUnder are every file and directory under root.
func pathsUnder(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out[p] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
