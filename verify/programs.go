package verify

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// systemDirs are the only places dialog and clipboard programs are taken
// from. $PATH is not consulted: a script planted earlier on it (in
// ~/.local/bin, say) would be shown every question and every code, and
// could answer "allow" itself.
var systemDirs = []string{"/usr/bin", "/bin", "/usr/local/bin", "/usr/X11R6/bin", "/usr/pkg/bin", "/opt/local/bin"}

// findSystemProgram returns the absolute path of the first of names found
// in a system directory, symlinks resolved, and refuses one that resolves
// into the user's home directory.
func findSystemProgram(names ...string) (string, error) {
	home, _ := os.UserHomeDir()
	for _, name := range names {
		for _, dir := range systemDirs {
			p := filepath.Join(dir, name)
			fi, err := os.Stat(p)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
				continue
			}
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				continue
			}
			if home != "" && (real == home || strings.HasPrefix(real, home+string(filepath.Separator))) {
				continue
			}
			return real, nil
		}
	}
	return "", fmt.Errorf("none of %s is installed in %s", strings.Join(names, ", "), strings.Join(systemDirs, ", "))
}

// errNoProgram is returned when no dialog program can be used.
var errNoProgram = errors.New(`dialog channel: zenity is not installed in a system directory ` +
	`(apt-get install zenity); programs on $PATH elsewhere are not trusted, and qarma is never used; ` +
	`or set [verify] channel = "command"`)
