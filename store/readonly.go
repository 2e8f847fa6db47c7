package store

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// ErrReadOnly means the state directory cannot be written: its file
// system is read-only, or its files are not this user's to write.
// Nothing is damaged; callers fail closed on it, as on ErrBusy.
var ErrReadOnly = errors.New("the state directory cannot be written")

// ReadOnlyError is ErrReadOnly naming the directory and the system's
// word for it.
type ReadOnlyError struct {
	Dir string
	Err error
}

func (e *ReadOnlyError) Error() string {
	why := "read-only file system"
	if !errors.Is(e.Err, syscall.EROFS) {
		why = "permission denied: read-only for this user"
	}
	return fmt.Sprintf("the state directory %s cannot be written (%s); what it holds is as it was, and calls are refused "+
		"until it can be written: make it writable again (remount the file system read-write, or give the directory back "+
		"to the user aqlguard runs as) and aqlguard goes on by itself (%v)", e.Dir, why, e.Err)
}

func (e *ReadOnlyError) Unwrap() []error { return []error{ErrReadOnly, e.Err} }

// notWritable is err as a *ReadOnlyError when it says dir cannot be
// written (EROFS, EACCES, EPERM), else err.
func notWritable(dir string, err error) error {
	if err == nil {
		return nil // (before ro, which escapes: a commit allocates nothing here)
	}
	if ro := (*ReadOnlyError)(nil); errors.As(err, &ro) {
		return err
	}
	if errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission) {
		return &ReadOnlyError{Dir: dir, Err: err}
	}
	return err
}
