package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Prepare makes what a confined server needs before it starts: its
// private temporary directory (0700, in g.Write and g.TempDir, the
// caller removes it when the server has stopped), and the runtime's
// caches the grant names that are not there yet (Landlock grants only
// what exists: npx could not make ~/.npm itself).
func Prepare(g *Grant) (tempDir string, err error) {
	for _, p := range g.Create {
		if _, err := os.Stat(p); err == nil {
			continue
		}
		if !isFileToMake(p) {
			if err := os.MkdirAll(p, 0o700); err != nil {
				return "", fmt.Errorf("making %s for the server's runtime: %w", p, err)
			}
			continue
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("making %s, which the server's arguments name: %w", p, err)
		}
		if f != nil {
			f.Close()
		}
	}
	tempDir, err = os.MkdirTemp("", "aqlguard-"+g.Server+"-")
	if err != nil {
		return "", fmt.Errorf("making the server's temporary directory: %w", err)
	}
	g.TempDir = tempDir
	g.Write = append(g.Write, tempDir)
	return tempDir, nil
}

// isFileToMake tells the files of Create from its directories: a file
// has a dot in its name (not a leading one: ~/.npm is a directory).
func isFileToMake(p string) bool {
	b := filepath.Base(p)
	return len(b) > 1 && strings.Contains(b[1:], ".")
}
