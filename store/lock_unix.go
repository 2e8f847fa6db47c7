//go:build unix

package store

import (
	"context"
	"errors"
	"fmt"
	"os"
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

const (
	lockPollMin = 100 * time.Microsecond
	lockPollMax = 2 * time.Millisecond
)

// lock takes the lock, shared for readers, until deadline.
func (l *fileLock) lock(ctx context.Context, shared bool, deadline time.Time) error {
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
			return ErrBusy
		}
		select {
		case <-ctx.Done():
			return ErrBusy
		case <-time.After(wait):
		}
		wait = min(2*wait, lockPollMax)
	}
}

func (l *fileLock) unlock() error {
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

func (l *fileLock) close() error { return l.f.Close() }
