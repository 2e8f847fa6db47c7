package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/aqlguard/aqlguard/internal/atomicfile"
)

// CopyMarkFile is the name, in a state directory, of the mark a `state
// copy` into it leaves until the copy is whole.
const CopyMarkFile = "aqlguard.copying"

// CopyMark says a state is the target of a copy that has not finished:
// it holds part of another state at most, and nothing may run on it.
// Copy sets it before the first row and clears it after the last record
// and the final checks; every Open refuses a state that carries one,
// with an *IncompleteCopyError, unless told the opener is the copy.
type CopyMark struct {
	// Source is the state id of the state being copied.
	Source string `json:"source"`
	// SourceHead is the source's audit head the copy moves (its
	// snapshot's).
	SourceHead Head `json:"source_head"`
	// By is who ran the copy, Began when.
	By    string    `json:"by"`
	Began time.Time `json:"began"`
}

// IncompleteCopyError is the refusal of a state that is the target of an
// unfinished copy.
type IncompleteCopyError struct {
	// Where names the state ("state directory /x", "PostgreSQL schema y").
	Where string
	Mark  CopyMark
}

func (e *IncompleteCopyError) Error() string {
	return fmt.Sprintf("incomplete copy: %s is the target of a state copy from state %s (%d audit records) begun %s by %s "+
		"that did not finish (it was stopped or failed before its last record and final checks), so it holds part of "+
		"that state at most and is refused: finish it with `aqlguard state copy --to ... --resume` while the source is stopped",
		e.Where, e.Mark.Source, e.Mark.SourceHead.Seq, e.Mark.Began.UTC().Format(time.RFC3339), e.Mark.By)
}

// ReadCopyMark reads the copy mark of the state directory dir: nil when
// there is none.
func ReadCopyMark(dir string) (*CopyMark, error) {
	data, err := os.ReadFile(filepath.Join(dir, CopyMarkFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the copy mark: %w", err)
	}
	var m CopyMark
	if err := json.Unmarshal(data, &m); err != nil {
		// A mark that does not read is still a mark: the copy did not
		// finish (it may have died writing it).
		return &CopyMark{Source: "(unreadable mark)"}, nil
	}
	return &m, nil
}

// CopyMark is the state's copy mark: nil when it is no unfinished copy's
// target.
func (s *Store) CopyMark(context.Context) (*CopyMark, error) {
	return ReadCopyMark(filepath.Dir(s.path))
}

// SetCopyMark marks the state as an unfinished copy's target (m) or, with
// nil, as whole. The mark is a file beside the database, written and
// removed durably (fsync of the file and the directory).
func (s *Store) SetCopyMark(_ context.Context, m *CopyMark) error {
	dir := filepath.Dir(s.path)
	path := filepath.Join(dir, CopyMarkFile)
	if m == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("clearing the copy mark: %w", err)
		}
		return syncDir(dir)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("writing the copy mark: %w", err)
	}
	if err := atomicfile.Write(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing the copy mark: %w", err)
	}
	return nil
}
