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

// restart brings a dead server back, trying until it starts or the pool
// closes.
func (s *Server) restart() {
	for attempt := 0; ; attempt++ {
		wait := restartDelay(attempt)
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
			s.mu.Lock()
			s.state.Restarts++
			s.mu.Unlock()
			if up := s.pool.opts.Upstream; up != nil {
				up.ServerRestarted(s)
			}
			return
		}
	}
}
