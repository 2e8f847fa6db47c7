package policy

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/aqlguard/aqlguard/config"
)

// maxManagedBytes bounds the managed file; a policy is a few KiB.
const maxManagedBytes = 4 << 20

// LoadManaged reads the managed policy file at path: the same format as
// a user's configuration, plus locked. It is refused unless neither the
// user running aqlguard nor anyone but its owner can write it, nor any
// directory above it (checkManaged): a managed policy the user can edit
// manages nothing. A missing file wraps fs.ErrNotExist.
func LoadManaged(path string) (*config.Config, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("the managed policy %q: the path must be absolute", path)
	}
	f, err := openManaged(path)
	var refused *ManagedFileError
	if err != nil && !errors.As(err, &refused) {
		return nil, fmt.Errorf("the managed policy %s: %w", path, err)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManagedBytes+1))
	if err != nil {
		return nil, fmt.Errorf("the managed policy %s: %w", path, err)
	}
	if len(data) > maxManagedBytes {
		return nil, fmt.Errorf("the managed policy %s is larger than %d bytes", path, maxManagedBytes)
	}
	return parse(data, path, true)
}

// ErrManagedWritable says the managed policy file, or a directory above
// it, can be written by someone it must not be writable by.
var ErrManagedWritable = errors.New("the managed policy can be changed by the user it manages")

// ManagedFileError says why a managed policy file is refused.
type ManagedFileError struct {
	Path string
	Why  string
}

func (e *ManagedFileError) Error() string {
	return fmt.Sprintf("the managed policy %s is refused: %s. Make it, and every directory above it, owned by root "+
		"and writable by root alone (chown root:root FILE; chmod 0644 FILE)", e.Path, e.Why)
}

func (e *ManagedFileError) Unwrap() error { return ErrManagedWritable }

// ParseManaged parses a managed policy file's contents (LoadManaged
// without the file's checks): for tests and for tools that check a
// managed file before it is installed.
func ParseManaged(data []byte, name string) (*config.Config, error) { return parse(data, name, true) }
