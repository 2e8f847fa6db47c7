//go:build !unix

package store

import (
	"context"
	"os"
	"time"
)

// fileLock is a no-op where flock(2) does not exist: bbolt's own file
// lock (with its 50 ms retry) serialises the processes there.
type fileLock struct{}

func openLock(string) (*fileLock, error) { return &fileLock{}, nil }

func openReadLock(string) (*fileLock, error) { return &fileLock{}, nil }

func (*fileLock) lock(context.Context, bool, time.Time) error { return nil }

func (*fileLock) unlock() error { return nil }

func (*fileLock) lockUntilDone(context.Context) error { return nil }

func (*fileLock) close() error { return nil }

// checkPrivate has no owner and mode bits to check here.
func checkPrivate(string) error { return nil }

func unlockFile(*os.File) {}

// sizeAndUnlinked is f's size; whether it was deleted cannot be told
// here.
func sizeAndUnlinked(f *os.File) (int64, bool, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, false, err
	}
	return st.Size(), false, nil
}
