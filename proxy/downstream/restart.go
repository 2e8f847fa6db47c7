package downstream

import (
	"math/rand/v2"
	"time"
)

// Backoff between restarts of a server that keeps dying: doubling from
// restartMin to restartMax, each wait jittered by up to a quarter so
// that servers that died together do not come back in lockstep.
const (
	restartMin = 500 * time.Millisecond
	restartMax = 30 * time.Second
)

// restartDelay is the wait before restart attempt n (0-based).
func restartDelay(n int) time.Duration {
	d := restartMin
	for range n {
		d *= 2
		if d >= restartMax {
			d = restartMax
			break
		}
	}
	return d + time.Duration(rand.Int64N(int64(d/4)+1))
}

// stableAfter is how long a server must stay up for its crashes to be
// forgotten: one that dies sooner after each start is crash-looping, and
// its restarts keep backing off.
var stableAfter = time.Minute

// restart brings a dead server back (or one whose first start failed),
// trying until it starts or the pool closes. Attempts count across a
// crash loop: the count starts over only once the server stayed up for
// stableAfter (see died).
func (s *Server) restart() {
	for {
		s.mu.Lock()
		attempt := s.crashes
		s.crashes++
		wait := restartDelay(attempt)
		s.state.Attempt, s.state.NextAttempt = attempt+1, time.Now().Add(wait)
		s.mu.Unlock()
		s.log.Info("restarting downstream server", "attempt", attempt+1, "in", wait.Round(time.Millisecond))
		select {
		case <-s.pool.ctx.Done():
			return
		case <-time.After(wait):
		}
		s.mu.RLock()
		stopped := s.stopped
		s.mu.RUnlock()
		if s.pool.closing.Load() || stopped {
			return
		}
		if s.start(s.pool.ctx, true) {
			s.renew(s.pool.ctx)
			s.mu.Lock()
			s.state.Restarts++
			s.mu.Unlock()
			if f := s.pool.opts.Restarted; f != nil {
				f(s.Name)
			}
			if up := s.pool.opts.Upstream; up != nil {
				up.ServerRestarted(s)
			}
			return
		}
	}
}

// died notes how long the run that just ended lasted: a server that
// stayed up for stableAfter starts its backoff over. s.mu is held.
func (s *Server) died(now time.Time) {
	if !s.upSince.IsZero() && now.Sub(s.upSince) >= stableAfter {
		s.crashes = 0
	}
	s.upSince = time.Time{}
}
