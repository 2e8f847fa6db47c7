package flows

import (
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
)

// Sessions are the flows of one principal's sessions, by session id:
// what each has read that counts for where data may go. A new session
// starts clean (but for what the Board holds); an ended one is forgotten
// (End); the human may clear one (Forget). Its lock is a leaf, so it may
// be used from anywhere, a commit's hook included.
type Sessions struct {
	// Board, when set, is shared with the client's other aqlguard
	// processes (a client that runs one per server).
	Board *Board
	// Now defaults to time.Now.
	Now func() time.Time

	mu sync.Mutex
	by map[string]*sessionUse
}

// sessionUse is a session's flows and when they were last used.
type sessionUse struct {
	Session
	used time.Time
}

// MaxSessions bounds the sessions whose flows are kept; the least
// recently used is forgotten first (a session idle that long has most
// likely ended without saying so).
const MaxSessions = 4096

func (s *Sessions) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Of is the session's flows, made when create (else nil when it has
// none).
func (s *Sessions) Of(session string, create bool) *Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.by[session]
	if u == nil && create {
		if s.by == nil {
			s.by = map[string]*sessionUse{}
		}
		if len(s.by) >= MaxSessions {
			s.forgetOldest()
		}
		u = &sessionUse{}
		if s.Board != nil {
			u.Share(s.Board)
		}
		s.by[session] = u
	}
	if u == nil {
		return nil
	}
	u.used = s.now()
	return &u.Session
}

// forgetOldest drops the least recently used session's flows; s.mu is
// held.
func (s *Sessions) forgetOldest() {
	var oldest string
	var at time.Time
	for id, u := range s.by {
		if oldest == "" || u.used.Before(at) {
			oldest, at = id, u.used
		}
	}
	delete(s.by, oldest)
}

// End forgets an ended session's flows.
func (s *Sessions) End(session string) {
	s.mu.Lock()
	delete(s.by, session)
	s.mu.Unlock()
}

// Forget clears what a session has read.
func (s *Sessions) Forget(session string) {
	if f := s.Of(session, false); f != nil {
		f.Clear()
	}
}

// Flow is what the evaluator is told of session's flows for a call with
// args; remote says its server is reached over the network. With a
// Board, a session that has read nothing yet still holds what the
// client's other processes read.
func (s *Sessions) Flow(session string, args map[string]any, remote bool) evaluator.Flow {
	if f := s.Of(session, s.Board != nil); f != nil {
		fl := f.Flow(args)
		fl.Remote = remote
		return fl
	}
	return evaluator.Flow{Remote: remote}
}
