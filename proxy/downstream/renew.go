package downstream

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
)

// What a client asks of a 2025-11-25 server may live in the server's
// process: its log level (logging/setLevel) and its resource
// subscriptions. A process started again after it died knows neither,
// and the client, which never saw it die, would wait for log messages
// and updates that no longer come. So the server remembers both as they
// are asked and asks them again of the new process before it is told
// back (restart). A 2026-07-28 server needs none of it: the level goes
// with every request and its listen streams are opened again
// (revision.ServerSession.OpenListens).

// asked is what the server's clients asked that lives in its process.
type asked struct {
	mu    sync.Mutex                 // one such request, or a renewal, at a time
	level json.RawMessage            // the last logging/setLevel's params
	subs  map[string]json.RawMessage // uri → the resources/subscribe that subscribed it
}

// livesInProcess reports whether method's effect is kept by the server
// process.
func livesInProcess(method string) bool {
	return method == mcpmethod.LoggingSetLevel || method == mcpmethod.ResourcesSubscribe || method == mcpmethod.ResourcesUnsubscribe
}

// requestRemembered sends a request livesInProcess names and remembers
// what it asked once the server agreed. An unsubscribe is forgotten
// before it goes, whatever the server answers: the client no longer
// wants the updates.
func (s *Server) requestRemembered(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	s.asked.mu.Lock()
	defer s.asked.mu.Unlock()
	var uri string
	if method != mcpmethod.LoggingSetLevel {
		uri, _ = exactURI(params) // one the server cannot read either is not remembered
	}
	if method == mcpmethod.ResourcesUnsubscribe {
		delete(s.asked.subs, uri)
	}
	res, err := s.request(ctx, method, params)
	if err != nil {
		return res, err
	}
	kept := append(json.RawMessage(nil), params...)
	switch {
	case method == mcpmethod.LoggingSetLevel:
		s.asked.level = kept
	case method == mcpmethod.ResourcesSubscribe && uri != "":
		if s.asked.subs == nil {
			s.asked.subs = map[string]json.RawMessage{}
		}
		s.asked.subs[uri] = kept
	}
	return res, nil
}

// renewTimeout bounds each request of a renewal.
const renewTimeout = 10 * time.Second

// renew asks a restarted server for the log level and subscriptions its
// clients had asked of the process that died. What it refuses now is
// logged: the client cannot be told in MCP, and must not be left to
// wait in silence.
func (s *Server) renew(ctx context.Context) {
	s.asked.mu.Lock()
	defer s.asked.mu.Unlock()
	if s.asked.level == nil && len(s.asked.subs) == 0 {
		return
	}
	if s.State().Modern {
		s.log.Warn("the restarted server speaks 2026-07-28: the log level and resource subscriptions its clients set in 2025-11-25 were not renewed",
			"subscriptions", len(s.asked.subs))
		s.asked.level, s.asked.subs = nil, nil
		return
	}
	if s.asked.level != nil {
		if _, err := s.renewOne(ctx, mcpmethod.LoggingSetLevel, s.asked.level); err != nil {
			s.log.Warn("the restarted server refused the log level its client had set", "err", err)
			s.asked.level = nil
		}
	}
	for uri, params := range s.asked.subs {
		if _, err := s.renewOne(ctx, mcpmethod.ResourcesSubscribe, params); err != nil {
			s.log.Warn("the restarted server refused a resource subscription its client had made; no updates of it will come", "uri", uri, "err", err)
			delete(s.asked.subs, uri)
		}
	}
}

func (s *Server) renewOne(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, renewTimeout)
	defer cancel()
	return s.request(ctx, method, params)
}
