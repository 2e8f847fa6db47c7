//go:build !unix

package store

import (
	"context"
	"time"
)

// fileLock is a no-op where flock(2) does not exist: bbolt's own file
// lock (with its 50 ms retry) serialises the processes there.
type fileLock struct{}

func openLock(string) (*fileLock, error) { return &fileLock{}, nil }

func (*fileLock) lock(context.Context, bool, time.Time) error { return nil }

func (*fileLock) unlock() error { return nil }

func (*fileLock) lockUntilDone(context.Context) error { return nil }

func (*fileLock) close() error { return nil }
