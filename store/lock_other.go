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

// unlinked cannot be told here.
func unlinked(os.FileInfo) bool { return false }

// checkPrivate has no owner and mode bits to check here.
func checkPrivate(string) error { return nil }

func unlockFile(*os.File) {}
