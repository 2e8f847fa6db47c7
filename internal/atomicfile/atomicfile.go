// Package atomicfile replaces a file whole: a crash leaves the old file or
// the new one, never half of either. aqlguard's own files (client config
// edits, its config, tokens, cursors, a service unit) are all written so.
package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes data to path through a temporary file in the same
// directory with mode, synced, then renamed over path; the directory is
// synced after.
func Write(path string, data []byte, mode fs.FileMode) error {
	return write(path, data, mode, nil)
}

// WriteLike is Write for a file that replaces like (path as it was): the
// new file gets like's owner and group where this process may give them,
// so root editing a service's root:aqlguard config does not leave it
// root:root, which the service could no longer read.
func WriteLike(path string, data []byte, mode fs.FileMode, like fs.FileInfo) error {
	return write(path, data, mode, like)
}

func write(path string, data []byte, mode fs.FileMode, like fs.FileInfo) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".aqlguard-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if like != nil {
		if err := keepOwner(tmp, like); err != nil {
			tmp.Close()
			return err
		}
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
