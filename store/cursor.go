package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/aqlguard/aqlguard/internal/atomicfile"
)

// ForwardCursor is how far the audit log was delivered to one
// destination: the last record the destination confirmed (its sequence
// number and hash, which the next record's prev must equal) and the
// position just after it.
type ForwardCursor struct {
	Seq         uint64      `json:"seq"`
	Hash        string      `json:"hash"`
	Position    LogPosition `json:"position"`
	Destination string      `json:"destination"`
	At          time.Time   `json:"at"`
}

// ForwardCursors keeps forwarding cursors durably in the state
// directory, one file per destination (forward/<name>.json, 0600, in a
// 0700 directory), written atomically (a temporary file, fsync, rename,
// fsync of the directory): a crash leaves the cursor before or after a
// delivery, never a torn one. Lease makes one process of those sharing
// the state directory the forwarder of a destination.
//
// It is the file backend of audit/forward's Cursors; a state kept in a
// database keeps them in a table instead.
type ForwardCursors struct {
	Dir string // the state directory
}

var cursorName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

func (c ForwardCursors) path(name, ext string) (string, error) {
	if !cursorName.MatchString(name) {
		return "", fmt.Errorf("forward cursor: %q is not a cursor name", name)
	}
	return filepath.Join(c.Dir, "forward", name+ext), nil
}

// Load reads a destination's cursor; ok is false when it has none.
func (c ForwardCursors) Load(_ context.Context, name string) (cur ForwardCursor, ok bool, err error) {
	path, err := c.path(name, ".json")
	if err != nil {
		return cur, false, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cur, false, nil
	}
	if err != nil {
		return cur, false, fmt.Errorf("forward cursor: %w", err)
	}
	if err := json.Unmarshal(b, &cur); err != nil {
		return cur, false, &CursorDamagedError{Where: path, Err: err}
	}
	return cur, true, nil
}

// Where is the file that keeps a destination's cursor.
func (c ForwardCursors) Where(name string) string {
	if path, err := c.path(name, ".json"); err == nil {
		return path
	}
	return name
}

// CursorDamagedError is a cursor that does not read: truncated, or not
// a cursor at all.
type CursorDamagedError struct {
	Where string // its file, or its row
	Err   error
}

func (e *CursorDamagedError) Error() string {
	return fmt.Sprintf("forward cursor %s is damaged: %v", e.Where, e.Err)
}

func (e *CursorDamagedError) Unwrap() error { return e.Err }

// Save writes a destination's cursor durably.
func (c ForwardCursors) Save(_ context.Context, name string, cur ForwardCursor) error {
	path, err := c.path(name, ".json")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("forward cursor: %w", err)
	}
	b, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("forward cursor: %w", err)
	}
	return nil
}

// Lease makes this process the forwarder of a destination until release
// is called or it exits (a lock on forward/<name>.lock). It waits while
// another process holds it, until ctx ends.
func (c ForwardCursors) Lease(ctx context.Context, name string) (release func(), err error) {
	path, err := c.path(name, ".lock")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("forward lease: %w", err)
	}
	l, err := openLock(path)
	if err != nil {
		return nil, fmt.Errorf("forward lease: %w", err)
	}
	if err := l.lockUntilDone(ctx); err != nil {
		l.close()
		return nil, err
	}
	return func() { _ = l.unlock(); _ = l.close() }, nil
}
