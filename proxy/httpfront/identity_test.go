package httpfront

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/proxy/clientauth"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/relay"
)

// TestSessionsBelongToTheirIdentity: a session id is found only with the
// credentials of the identity that opened it, and each identity's
// sessions run on its own relay configuration (its principal's guard).
func TestSessionsBelongToTheirIdentity(t *testing.T) {
	tokA, dA := clientauth.NewToken()
	tokB, dB := clientauth.NewToken()
	cfg := &config.Config{Agent: "default", Serve: config.Serve{Clients: []config.ServeClient{
		{Name: "a", TokenSHA256: dA}, {Name: "b", TokenSHA256: dB}}}}
	auth := clientauth.New(clientauth.StaticClients(cfg, ""), cfg.Agent, nil, nil)
	relays := map[string]*relay.Config{}
	newConfig := func() *relay.Config {
		return &relay.Config{Version: "test", ProtocolVersions: []string{"2025-11-25"}, Log: slog.New(slog.DiscardHandler),
			NewTools: func(*relay.Session) (relay.Tools, error) { return noTools{}, nil }}
	}
	base := newConfig()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := New(ctx, base, Options{Auth: auth, RelayFor: func(_ context.Context, id clientauth.Identity) (*relay.Config, func(), error) {
		if relays[id.Principal] == nil {
			relays[id.Principal] = newConfig()
		}
		return relays[id.Principal], func() {}, nil
	}})
	defer f.Close()
	do := func(token, session, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		if session != "" {
			r.Header.Set(headerSession, session)
		}
		w := httptest.NewRecorder()
		f.ServeHTTP(w, r)
		return w
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	w := do(tokA, "", initialize)
	id := w.Header().Get(headerSession)
	if w.Code != http.StatusOK || id == "" {
		t.Fatalf("a's initialize: %d %s", w.Code, w.Body)
	}
	if len(relays) != 1 || relays["a"] == nil {
		t.Fatalf("a's session runs on %v", relays)
	}
	const ping = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if w := do(tokB, id, ping); w.Code != http.StatusNotFound {
		t.Errorf("b on a's session: %d", w.Code)
	}
	if w := do("", id, ping); w.Code != http.StatusUnauthorized || !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer ") {
		t.Errorf("no token on a's session: %d %q", w.Code, w.Header().Get("WWW-Authenticate"))
	}
	if w := do(tokA, id, ping); w.Code != http.StatusOK {
		t.Errorf("a on its own session: %d %s", w.Code, w.Body)
	}
	// Revoked: a's token no longer opens its own session either.
	cfg.Serve.Clients = cfg.Serve.Clients[1:]
	auth.SetStatic(clientauth.StaticClients(cfg, ""), cfg.Agent)
	if w := do(tokA, id, ping); w.Code != http.StatusUnauthorized {
		t.Errorf("a's revoked token on its session: %d", w.Code)
	}
}

type noTools struct{}

func (noTools) ListTools(context.Context) ([]json.RawMessage, error) { return nil, nil }
func (noTools) CallTool(context.Context, relay.ToolCall) (json.RawMessage, error) {
	return nil, errors.New("no tools")
}
func (noTools) ToolsChanged(context.Context, *downstream.Server) bool { return false }
