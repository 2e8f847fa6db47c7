//go:build !unix

package policy

import (
	"os"
	"path/filepath"
)

// DefaultManagedPath is where the system's managed policy lives:
// %ProgramData%\aqlguard\managed.toml.
func DefaultManagedPath() string {
	dir := os.Getenv("ProgramData")
	if dir == "" {
		dir = `C:\ProgramData`
	}
	return filepath.Join(dir, "aqlguard", "managed.toml")
}

// openManaged refuses the file: who may write it is an access control
// list this build does not read yet, and a managed policy that might be
// the user's to edit is not trusted.
func openManaged(path string) (*os.File, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return nil, &ManagedFileError{Path: path, Why: "its access control list is not checked on this platform yet, so it cannot be trusted"}
}
