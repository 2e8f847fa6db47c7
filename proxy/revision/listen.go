package revision

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A 2026-07-28 client asks for the notifications it wants on
// subscriptions/listen streams, each open until the client cancels it:
// list changes and resource updates go only to the streams that asked
// for them, tagged with the stream's id, log messages only once a
// request asked for a log level.

// ListenHost is what a session does for its client's listen streams.
type ListenHost interface {
	// Subscribe subscribes the session's servers to a resource's
	// updates, once per stream that names it; Unsubscribe ends one.
	Subscribe(ctx context.Context, uri string) error
	Unsubscribe(uri string)
	// Notify sends the client a notification; ctx says which of its
	// requests it belongs to, if any.
	Notify(ctx context.Context, method string, params json.RawMessage) error
}

// listenStreams are a 2026-07-28 client's open subscriptions/listen streams
// and the log level its requests asked for, behind their own lock.
type listenStreams struct {
	host ListenHost
	life context.Context // the session's: a stream ends with it
	log  *slog.Logger

	mu        sync.Mutex
	listeners []*listener
	logLevel  string // the last one a request asked for; "" sends no log messages
}

// listener is one open subscriptions/listen stream.
type listener struct {
	id                        json.RawMessage
	tools, prompts, resources bool
	uris                      map[string]bool
}

// newListeners keeps the listen streams of a session that lives as long
// as life.
func newListeners(life context.Context, host ListenHost, log *slog.Logger) *listenStreams {
	return &listenStreams{host: host, life: life, log: log}
}

// SetLogLevel records the log level a request asked for, and reports
// whether it changed (then the servers that log are to be told).
func (ls *listenStreams) SetLogLevel(level string) (changed bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	changed = ls.logLevel != level
	ls.logLevel = level
	return changed
}

// Listen serves subscriptions/listen: it acknowledges what it will send
// (what the client asked for and the servers can do: caps are the
// session's capabilities), subscribes the servers to the resources
// named, and keeps the stream open until the client cancels it or the
// session ends.
func (ls *listenStreams) Listen(ctx context.Context, req *jsonrpc.Request, caps map[string]json.RawMessage) (json.RawMessage, error) {
	if !req.ID.IsValid() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "subscriptions/listen needs a request id"}
	}
	p, err := Listen(req.Params)
	if err != nil {
		return nil, err
	}
	id, _ := json.Marshal(req.ID.Raw())
	flag := func(feature, name string) bool {
		var f map[string]any
		_ = json.Unmarshal(caps[feature], &f)
		b, _ := f[name].(bool)
		return b
	}
	l := &listener{id: id, uris: map[string]bool{},
		tools:     p.Notifications.Tools && flag("tools", "listChanged"),
		prompts:   p.Notifications.Prompts && flag("prompts", "listChanged"),
		resources: p.Notifications.Resources && flag("resources", "listChanged")}
	if flag("resources", "subscribe") {
		for _, uri := range p.Notifications.URIs {
			if l.uris[uri] {
				continue // named twice: one subscription, ended once
			}
			if err := ls.host.Subscribe(ctx, uri); err != nil {
				ls.unsubscribeAll(l)
				return nil, err
			}
			l.uris[uri] = true
		}
	}
	agreed := map[string]any{}
	if l.tools {
		agreed["toolsListChanged"] = true
	}
	if l.prompts {
		agreed["promptsListChanged"] = true
	}
	if l.resources {
		agreed["resourcesListChanged"] = true
	}
	if len(l.uris) > 0 {
		uris := make([]string, 0, len(l.uris))
		for _, u := range p.Notifications.URIs {
			if l.uris[u] && !slices.Contains(uris, u) {
				uris = append(uris, u)
			}
		}
		agreed["resourceSubscriptions"] = uris
	}
	ls.mu.Lock()
	ls.listeners = append(ls.listeners, l)
	ls.mu.Unlock()
	ack, _ := json.Marshal(map[string]any{"_meta": map[string]json.RawMessage{MetaSubscriptionID: id}, "notifications": agreed})
	if err := ls.host.Notify(ctx, "notifications/subscriptions/acknowledged", ack); err != nil {
		ls.log.Debug("a subscription could not be acknowledged", "err", err)
	}
	if len(agreed) > 0 {
		select {
		case <-ctx.Done():
		case <-ls.life.Done():
		}
	}
	ls.mu.Lock()
	ls.listeners = slices.DeleteFunc(ls.listeners, func(x *listener) bool { return x == l })
	ls.mu.Unlock()
	ls.unsubscribeAll(l)
	return json.Marshal(map[string]any{"_meta": map[string]json.RawMessage{MetaSubscriptionID: id}})
}

// unsubscribeAll ends a stream's subscriptions.
func (ls *listenStreams) unsubscribeAll(l *listener) {
	for uri := range l.uris {
		ls.host.Unsubscribe(uri)
	}
}

// Notify delivers a notification to a 2026-07-28 client: list changes
// and resource updates only on the listen streams that asked for them,
// tagged with the stream's id; log messages only once a request asked
// for a log level; everything else (progress) as it is.
func (ls *listenStreams) Notify(method string, params json.RawMessage) {
	var wants func(l *listener) bool
	switch method {
	case "notifications/tools/list_changed":
		wants = func(l *listener) bool { return l.tools }
	case "notifications/prompts/list_changed":
		wants = func(l *listener) bool { return l.prompts }
	case "notifications/resources/list_changed":
		wants = func(l *listener) bool { return l.resources }
	case "notifications/resources/updated":
		uri := exactString(params, "uri")
		wants = func(l *listener) bool { return l.uris[uri] }
	case "notifications/message":
		ls.mu.Lock()
		on := ls.logLevel != ""
		ls.mu.Unlock()
		if on {
			ls.send(method, params)
		}
		return
	default:
		ls.send(method, params)
		return
	}
	ls.mu.Lock()
	var to []*listener
	for _, l := range ls.listeners {
		if wants(l) {
			to = append(to, l)
		}
	}
	ls.mu.Unlock()
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage(`{}`)
	}
	for _, l := range to {
		meta := rawjson.Members(params)["_meta"]
		if meta == nil {
			meta = json.RawMessage(`{}`)
		}
		meta, err := rawjson.Set(meta, MetaSubscriptionID, l.id)
		if err != nil {
			continue
		}
		tagged, err := rawjson.Set(params, "_meta", meta)
		if err != nil {
			continue
		}
		ls.send(method, tagged)
	}
}

func (ls *listenStreams) send(method string, params json.RawMessage) {
	if err := ls.host.Notify(context.Background(), method, params); err != nil {
		ls.log.Debug("a notification could not be sent to the client", "method", method, "err", err)
	}
}

// exactString is the string member name of params, read exactly; "" when
// it is missing or not a string.
func exactString(params json.RawMessage, name string) string {
	v, err := rawjson.Exact(params, name)
	if err != nil || v[0] == nil {
		return ""
	}
	var s string
	_ = json.Unmarshal(v[0], &s)
	return s
}
