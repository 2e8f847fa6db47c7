package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// QuestionTurn waits until this process may put a question to the human
// about principal, and returns the function that ends the turn. Processes
// sharing the state directory take turns (a lock file per principal), so
// at most one question per principal is on the human's screen at a time,
// whichever client asked. Callers serialise their own goroutines first;
// the lock file only orders processes. On systems without flock(2) the
// turn is this process's alone.
func (s *Store) QuestionTurn(ctx context.Context, principal string) (func(), error) {
	name := "question-" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, principal) + ".lock"
	l, err := openLock(filepath.Join(filepath.Dir(s.path), name))
	if err != nil {
		return nil, fmt.Errorf("waiting to ask a human: %w", err)
	}
	if err := l.lockUntilDone(ctx); err != nil {
		_ = l.close()
		return nil, fmt.Errorf("waiting to ask a human: %w", err)
	}
	return func() {
		_ = l.unlock()
		_ = l.close()
	}, nil
}
