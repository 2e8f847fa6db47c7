//go:build unix

package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// fileLock is the lock two aqlguard processes take before opening the
// database. bbolt locks the file itself, but when the lock is taken it
// retries every 50 ms: a call that meets the other process mid-commit
// (which takes about a millisecond) would wait 50 ms. Our own lock file,
// polled from 100 µs with backoff up to 2 ms, waits about as long as the
// other process actually holds it; bbolt's own lock then never waits.
type fileLock struct {
	f *os.File
}

func openLock(path string) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the lock file: %w", err)
	}
	return &fileLock{f: f}, nil
}

// openReadLock is openLock for a reader, which a copy it cannot write
// (a backup on a read-only mount, another user's files) must not stop:
// the lock file is then opened for reading (flock(2) needs no more),
// and on a read-only file system that has none, there is no lock to
// take: nobody can write there.
func openReadLock(path string) (*fileLock, error) {
	l, err := openLock(path)
	if err == nil || !errors.Is(err, syscall.EROFS) && !errors.Is(err, fs.ErrPermission) {
		return l, err
	}
	f, rerr := os.Open(path)
	switch {
	case rerr == nil:
		return &fileLock{f: f}, nil
	case errors.Is(rerr, fs.ErrNotExist) && errors.Is(err, syscall.EROFS):
		return &fileLock{}, nil
	}
	return nil, err
}

const (
	lockPollMin = 100 * time.Microsecond
	lockPollMax = 2 * time.Millisecond
)

// lock takes the lock, shared for readers, until deadline.
func (l *fileLock) lock(ctx context.Context, shared bool, deadline time.Time) error {
	if l.f == nil {
		return nil // a read-only file system: see openReadLock
	}
	how := syscall.LOCK_EX
	if shared {
		how = syscall.LOCK_SH
	}
	wait := lockPollMin
	for {
		err := syscall.Flock(int(l.f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("locking %s: %w", l.f.Name(), err)
		}
		if time.Now().Add(wait).After(deadline) {
			return l.busy()
		}
		select {
		case <-ctx.Done():
			return ctx.Err() // the caller gave up: not a busy database
		case <-time.After(wait):
		}
		wait = min(2*wait, lockPollMax)
	}
}

// busy is ErrBusy naming the process that holds the lock, where the
// system says (Linux: /proc/locks).
func (l *fileLock) busy() error {
	if pid := lockHolder(l.f); pid > 0 {
		return fmt.Errorf("%w, pid %d", ErrBusy, pid)
	}
	return ErrBusy
}

// lockHolder is the pid of the process holding f's flock(2), 0 when it
// cannot be told. Only a busy lock asks: it costs a read of /proc/locks.
func lockHolder(f *os.File) int {
	st, err := f.Stat()
	if err != nil {
		return 0
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	raw, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	ino := ":" + strconv.FormatUint(sys.Ino, 10)
	for _, line := range strings.Split(string(raw), "\n") {
		// "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"; waiters
		// have "->" after the number.
		fields := strings.Fields(line)
		if len(fields) < 8 || fields[1] != "FLOCK" || !strings.HasSuffix(fields[5], ino) {
			continue
		}
		if pid, err := strconv.Atoi(fields[4]); err == nil && pid > 0 && pid != os.Getpid() {
			return pid
		}
	}
	return 0
}

// sizeAndUnlinked is f's size and whether it was deleted: one fstat(2),
// with no FileInfo to allocate (a commit asks it of the log's segment).
func sizeAndUnlinked(f *os.File) (size int64, gone bool, err error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return 0, false, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return st.Size, st.Nlink == 0, nil
}

func (l *fileLock) unlock() error {
	if l.f == nil {
		return nil
	}
	return syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
}

// questionPollMax is how often a process waiting for its turn to ask the
// human looks again: a human answers in seconds, so a tenth of one is
// prompt enough and costs nothing.
const questionPollMax = 100 * time.Millisecond

// lockUntilDone takes the lock exclusively, waiting until ctx ends.
func (l *fileLock) lockUntilDone(ctx context.Context) error {
	wait := lockPollMin
	for {
		err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("locking %s: %w", l.f.Name(), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, questionPollMax)
	}
}

func (l *fileLock) close() error {
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

// checkPrivate refuses a state directory that others can write or that
// another user owns, as ssh refuses a key others can write: whoever can
// write there can replace the database (and its blocks) or the audit
// log. It looks at the directory and what the store keeps in it.
func checkPrivate(dir string) error {
	paths := []string{dir, filepath.Join(dir, FileName), filepath.Join(dir, FileName+".lock"),
		filepath.Join(dir, GenerationFile), filepath.Join(dir, AuditDir)}
	if segs, err := filepath.Glob(filepath.Join(dir, AuditDir, segmentPrefix+"*"+segmentSuffix)); err == nil {
		paths = append(paths, segs...)
	}
	// The forwarders' cursors: whoever rewrites one skips records.
	paths = append(paths, filepath.Join(dir, "forward"))
	if cursors, err := filepath.Glob(filepath.Join(dir, "forward", "*.json")); err == nil {
		paths = append(paths, cursors...)
	}
	uid := os.Geteuid()
	var problems []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			continue // not there yet: it is created private
		}
		if m := st.Mode().Perm(); m&0o022 != 0 {
			problems = append(problems, fmt.Sprintf("%s is writable by others (mode %04o)", p, m))
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != uid && sys.Uid != 0 {
			problems = append(problems, fmt.Sprintf("%s belongs to uid %d, not to this user (uid %d)", p, sys.Uid, uid))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("the state directory is not private: %s. Anyone who can write there can replace the database "+
		"(and the blocks it holds) or the audit log; aqlguard does not use it until it is fixed: chmod -R go-w %s "+
		"(and chown it to this user)", strings.Join(problems, "; "), dir)
}

// unlockFile lets go of a flock(2) on f's open file description.
func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
