// Command resserver is an MCP server (2025-11-25, stdio) with resources
// one can subscribe to, for aqlguard's end-to-end tests of resource
// subscriptions: it is a server aqlguard must not simply believe. Its
// tool announce sends notifications/resources/updated for whatever uri
// it is given — one nobody subscribed to, or one of another server's —
// and it can be slow to subscribe or unsubscribe, so that a client's
// subscribe and unsubscribe race.
//
// Usage: resserver -name NAME [-subscribe-delay D] [-unsubscribe-delay D]
//
// Its resources are NAME://doc/1 and NAME://doc/2. Tools: announce
// {"uri"} (sends the update, answers "announced URI"), notify {"method",
// "params"} (sends that notification as it is given, params a JSON text)
// and subscribed {} (answers the uris subscribed now, sorted, one a
// line).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

type server struct {
	name                 string
	subDelay, unsubDelay time.Duration
	peer                 *link.Peer
	mu                   sync.Mutex
	subscribed           map[string]bool
}

func main() {
	name := flag.String("name", "resserver", "server name, the scheme of its resources' uris")
	subDelay := flag.Duration("subscribe-delay", 0, "answer resources/subscribe this much later")
	unsubDelay := flag.Duration("unsubscribe-delay", 0, "answer resources/unsubscribe this much later")
	flag.Parse()
	s := &server{name: *name, subDelay: *subDelay, unsubDelay: *unsubDelay, subscribed: map[string]bool{}}
	conn := link.NewLineConn(os.Stdin, os.Stdout, func() error { return nil })
	s.peer = link.New(conn, s, slog.New(slog.DiscardHandler))
	s.peer.Start()
	<-s.peer.Done()
}

func (s *server) Notification(context.Context, *jsonrpc.Request) {}

func (s *server) Request(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	var p struct {
		URI       string `json:"uri"`
		Name      string `json:"name"`
		Arguments struct {
			URI    string `json:"uri"`
			Method string `json:"method"`
			Params string `json:"params"`
		} `json:"arguments"`
	}
	_ = json.Unmarshal(req.Params, &p)
	text := func(t string) (json.RawMessage, error) {
		return json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": t}}})
	}
	switch req.Method {
	case "initialize":
		return json.Marshal(map[string]any{"protocolVersion": "2025-11-25",
			"capabilities": map[string]any{"tools": map[string]any{}, "resources": map[string]any{"subscribe": true}},
			"serverInfo":   map[string]any{"name": s.name, "version": "1.0.0"}})
	case "resources/list":
		return json.Marshal(map[string]any{"resources": []map[string]string{
			{"uri": s.name + "://doc/1", "name": "doc1"}, {"uri": s.name + "://doc/2", "name": "doc2"}}})
	case "resources/read":
		return json.Marshal(map[string]any{"contents": []map[string]string{{"uri": p.URI, "text": "the text of " + p.URI}}})
	case "resources/subscribe", "resources/unsubscribe":
		delay := s.subDelay
		if req.Method == "resources/unsubscribe" {
			delay = s.unsubDelay
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		s.mu.Lock()
		if req.Method == "resources/subscribe" {
			s.subscribed[p.URI] = true
		} else {
			delete(s.subscribed, p.URI)
		}
		s.mu.Unlock()
		return json.RawMessage(`{}`), nil
	case "tools/list":
		return json.RawMessage(`{"tools":[` +
			`{"name":"announce","description":"Says a resource changed.","inputSchema":{"type":"object","properties":{"uri":{"type":"string"}}},"annotations":{"readOnlyHint":true}},` +
			`{"name":"notify","description":"Sends a notification.","inputSchema":{"type":"object","properties":{"method":{"type":"string"},"params":{"type":"string"}}},"annotations":{"readOnlyHint":true}},` +
			`{"name":"subscribed","description":"The resources subscribed now.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`), nil
	case "tools/call":
		switch p.Name {
		case "announce":
			params, _ := json.Marshal(map[string]string{"uri": p.Arguments.URI})
			_ = s.peer.Notify(ctx, "notifications/resources/updated", params)
			return text("announced " + p.Arguments.URI)
		case "notify":
			_ = s.peer.Notify(ctx, p.Arguments.Method, json.RawMessage(p.Arguments.Params))
			return text("sent " + p.Arguments.Method)
		case "subscribed":
			s.mu.Lock()
			uris := make([]string, 0, len(s.subscribed))
			for u := range s.subscribed {
				uris = append(uris, u)
			}
			s.mu.Unlock()
			slices.Sort(uris)
			return text(strings.Join(uris, "\n"))
		}
	case "ping":
		return json.RawMessage(`{}`), nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + req.Method}
}
