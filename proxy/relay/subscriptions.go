package relay

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Resource subscriptions. A server's notifications/resources/updated
// reaches the client only for a resource the client subscribed to, and
// only from the server the subscription went to: any server can name
// any uri, and a server that names another's resource, or one nobody
// asked about, speaks for what is not its own.
//
// Subscribing and unsubscribing a uri take turns: a 2026-07-28 stream
// that subscribes while the last stream's unsubscribe is still on its way
// must find the server subscribed when both are done, whichever the
// server answers first.

// subscriptions are a session's resource subscriptions, by uri.
type subscriptions struct {
	mu    sync.Mutex
	byURI map[string]*subscription
}

// subscription is one uri's.
type subscription struct {
	turn sync.Mutex // held across a subscribe or unsubscribe at the server
	// held counts those holding or waiting for turn: the entry stays
	// while any does.
	held int
	// server is the server the uri is subscribed at, "" while it is not.
	server string
	// streams are the 2026-07-28 listen streams that name the uri (a
	// 2025-11-25 client's subscription counts as one).
	streams int
}

// take waits for the uri's turn; release gives it back.
func (t *subscriptions) take(uri string) (sub *subscription, release func()) {
	t.mu.Lock()
	if t.byURI == nil {
		t.byURI = map[string]*subscription{}
	}
	sub = t.byURI[uri]
	if sub == nil {
		sub = &subscription{}
		t.byURI[uri] = sub
	}
	sub.held++
	t.mu.Unlock()
	sub.turn.Lock()
	return sub, func() {
		t.mu.Lock()
		sub.held--
		if sub.held == 0 && sub.streams == 0 {
			delete(t.byURI, uri)
		}
		t.mu.Unlock()
		sub.turn.Unlock()
	}
}

// set records, under the uri's turn, where it is subscribed and by how
// many streams.
func (t *subscriptions) set(sub *subscription, server string, streams int) {
	t.mu.Lock()
	sub.server, sub.streams = server, streams
	t.mu.Unlock()
}

// from reports whether an update of uri from server is one the client
// asked for.
func (t *subscriptions) from(server, uri string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	sub := t.byURI[uri]
	return sub != nil && sub.streams > 0 && sub.server == server
}

// subscribeOnce serves a 2025-11-25 client's resources/subscribe and
// resources/unsubscribe: the server's answer is the client's. The
// subscription is recorded before the request goes, so that an update
// the server sends before it answers is not lost, and forgotten before
// an unsubscribe goes.
func (s *Session) subscribeOnce(ctx context.Context, req *jsonrpc.Request, uri string) (json.RawMessage, error) {
	srv, err := s.resourceServer(ctx, uri)
	if err != nil {
		return nil, err
	}
	sub, release := s.subs.take(uri)
	defer release()
	wasServer, wasStreams := sub.server, sub.streams
	if req.Method == mcpmethod.ResourcesSubscribe {
		s.subs.set(sub, srv.Name, 1)
	} else {
		s.subs.set(sub, "", 0)
	}
	res, err := s.atServer(ctx, srv, req.Method, uri, req.Params)
	if err != nil && req.Method == mcpmethod.ResourcesSubscribe {
		s.subs.set(sub, wasServer, wasStreams)
	}
	return res, err
}

// atServer subscribes or unsubscribes a server: resources/subscribe and
// resources/unsubscribe to one of 2025-11-25, its own listen stream at
// one of 2026-07-28 (downstream.Server.Subscribe).
func (s *Session) atServer(ctx context.Context, srv *downstream.Server, method, uri string, params json.RawMessage) (json.RawMessage, error) {
	if !srv.State().Modern {
		return s.pool.Forward(ctx, srv, method, params)
	}
	var err error
	if method == mcpmethod.ResourcesSubscribe {
		err = srv.Subscribe(ctx, uri, params)
	} else {
		err = srv.Unsubscribe(ctx, uri, params)
	}
	if err != nil {
		return nil, err
	}
	return json.RawMessage(`{}`), nil
}

// subscribe adds a listen stream to a resource's subscription: the first
// subscribes the server.
func (s *Session) subscribe(ctx context.Context, uri string) error {
	sub, release := s.subs.take(uri)
	defer release()
	if sub.streams > 0 {
		s.subs.set(sub, sub.server, sub.streams+1)
		return nil
	}
	srv, err := s.resourceServer(ctx, uri)
	if err != nil {
		return err
	}
	s.subs.set(sub, srv.Name, 1)
	params, _ := json.Marshal(map[string]string{"uri": uri})
	if _, err := s.atServer(ctx, srv, mcpmethod.ResourcesSubscribe, uri, params); err != nil {
		s.subs.set(sub, "", 0)
		return err
	}
	return nil
}

// unsubscribe takes a listen stream from a resource's subscription: the
// last unsubscribes the server it was subscribed at.
func (s *Session) unsubscribe(uri string) {
	sub, release := s.subs.take(uri)
	defer release()
	if sub.streams == 0 {
		return
	}
	if sub.streams > 1 {
		s.subs.set(sub, sub.server, sub.streams-1)
		return
	}
	server := sub.server
	s.subs.set(sub, "", 0)
	srv, ok := s.pool.Server(server)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(s.life, 10*time.Second)
	defer cancel()
	params, _ := json.Marshal(map[string]string{"uri": uri})
	if _, err := s.atServer(ctx, srv, mcpmethod.ResourcesUnsubscribe, uri, params); err != nil {
		s.log.Debug("a resource could not be unsubscribed", "server", server, "err", err)
	}
}
