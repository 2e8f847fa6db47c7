// Package remoteauth makes aqlguard the OAuth 2.1 client that MCP's
// authorization spec describes, for remote servers configured with
// auth = "oauth": on a server's 401 it discovers the protected resource
// and authorization server metadata, registers (dynamically, or as a
// configured client id), opens the browser for the user's consent with a
// loopback redirect and PKCE, and exchanges the code — all of it the
// go-sdk's auth.AuthorizationCodeHandler (on golang.org/x/oauth2), none
// of it written here. What this package adds is the keeping: the grant
// (client and tokens) goes to the OS keyring or a 0600 file, so a
// restart refreshes instead of asking again, and a refreshed token is
// kept as soon as it is issued. No token is ever in a log line or an
// error message.
package remoteauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// DefaultConsentTimeout bounds how long an authorization waits for the
// user's consent in the browser.
const DefaultConsentTimeout = 5 * time.Minute

// Manager holds the authorizations of one aqlguard process: one per
// server, shared by every session's connection to it.
type Manager struct {
	Store *Store
	Log   *slog.Logger
	// OpenBrowser shows the consent page; the default runs $BROWSER, else
	// the platform's opener (xdg-open, open, rundll32).
	OpenBrowser    func(ctx context.Context, url string) error
	ConsentTimeout time.Duration

	mu      sync.Mutex
	servers map[string]*server
}

// server is the authorization of one remote server.
type server struct {
	m        *Manager
	name     string
	url      string
	key      string // the store's key
	handler  *auth.AuthorizationCodeHandler
	authMu   sync.Mutex // one authorization at a time
	redirect string

	mu      sync.Mutex
	grant   *Grant
	waiting chan url.Values // the consent in progress, if any
}

// Transport returns the round tripper for a server's requests: base with
// the server's bearer token, authorizing on a 401 (or a 403 that asks
// for more scope) and sending the request again once.
func (m *Manager) Transport(name, serverURL, clientID string, base http.RoundTripper) (http.RoundTripper, error) {
	s, err := m.server(name, serverURL, clientID)
	if err != nil {
		return nil, err
	}
	return &transport{s: s, base: base}, nil
}

func storeKey(name, serverURL string) string {
	sum := sha256.Sum256([]byte(serverURL))
	return name + "-" + hex.EncodeToString(sum[:6])
}

func (m *Manager) server(name, serverURL, clientID string) (*server, error) {
	key := storeKey(name, serverURL)
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.servers[key]; ok {
		return s, nil
	}
	if m.servers == nil {
		m.servers = map[string]*server{}
	}
	if m.Log == nil {
		m.Log = slog.New(slog.DiscardHandler)
	}
	s := &server{m: m, name: name, url: serverURL, key: key}
	// The redirect's listener stays for the process's life: its port is
	// the one the client registered with.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the authorization's redirect: %w", err)
	}
	s.redirect = "http://" + ln.Addr().String() + "/callback"
	go func() { _ = http.Serve(ln, http.HandlerFunc(s.callback)) }()

	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              s.redirect,
		AuthorizationCodeFetcher: s.consent,
		RequestRefreshToken:      true,
		NewTokenSource:           s.newTokenSource,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{s.redirect}, ClientName: "aqlguard (" + name + ")",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
			TokenEndpointAuthMethod: "none"}},
	}
	if clientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: clientID}
	}
	g, err := m.Store.Load(key)
	if err != nil {
		m.Log.Warn("a kept authorization could not be read; the server will ask again", "server", name, "err", err)
	}
	if g != nil && g.URL == serverURL && g.Token != nil {
		s.grant = g
		oc := &oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret, Scopes: g.Scopes,
			Endpoint: oauth2.Endpoint{TokenURL: g.TokenURL, AuthStyle: g.AuthStyle}}
		cfg.InitialTokenSource = s.keeping(oc, oc.TokenSource(context.Background(), g.Token))
	}
	if s.handler, err = auth.NewAuthorizationCodeHandler(cfg); err != nil {
		return nil, err
	}
	s.grant = g
	m.servers[key] = s
	return s, nil
}

// newTokenSource keeps what an authorization got (the handler calls it
// after the code exchange).
func (s *server) newTokenSource(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
	ts := s.keeping(oc, oc.TokenSource(ctx, tok))
	_, _ = ts.Token() // keep it now: the first token is the one a crash must not lose
	return ts, nil
}

// keeping wraps a token source so that every new token (the first, each
// refresh) is kept in the store before it is used.
func (s *server) keeping(oc *oauth2.Config, base oauth2.TokenSource) oauth2.TokenSource {
	return &keptSource{s: s, oc: oc, base: base}
}

type keptSource struct {
	s    *server
	oc   *oauth2.Config
	base oauth2.TokenSource

	mu   sync.Mutex
	last string
}

func (k *keptSource) Token() (*oauth2.Token, error) {
	tok, err := k.base.Token()
	if err != nil {
		return nil, k.s.clean(err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if tok.AccessToken == k.last {
		return tok, nil
	}
	k.last = tok.AccessToken
	g := &Grant{URL: k.s.url, ClientID: k.oc.ClientID, ClientSecret: k.oc.ClientSecret, TokenURL: k.oc.Endpoint.TokenURL,
		AuthStyle: k.oc.Endpoint.AuthStyle, Scopes: k.oc.Scopes, Token: tok}
	k.s.mu.Lock()
	k.s.grant = g
	k.s.mu.Unlock()
	if err := k.s.m.Store.Save(k.s.key, g); err != nil {
		k.s.m.Log.Warn("a new token could not be kept; the next start will ask again", "server", k.s.name, "err", k.s.clean(err))
	} else {
		k.s.m.Log.Info("an authorization was kept", "server", k.s.name, "expires", tok.Expiry.Round(time.Second))
	}
	return tok, nil
}

// clean is err without any secret of the server's grant in its text: an
// authorization server's error body, quoted by the oauth2 library, is
// not ours to trust.
func (s *server) clean(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	s.mu.Lock()
	g := s.grant
	s.mu.Unlock()
	if g != nil {
		for _, secret := range []string{g.ClientSecret, tokenField(g, "access"), tokenField(g, "refresh")} {
			if len(secret) >= 4 {
				text = strings.ReplaceAll(text, secret, "[redacted]")
			}
		}
	}
	return errors.New(text)
}

func tokenField(g *Grant, which string) string {
	if g.Token == nil {
		return ""
	}
	if which == "access" {
		return g.Token.AccessToken
	}
	return g.Token.RefreshToken
}

// consent is the authorization's browser step: the page is opened (and
// its address logged, for a machine with no browser), and the loopback
// redirect brings the code back.
func (s *server) consent(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	got := make(chan url.Values, 1)
	s.mu.Lock()
	s.waiting = got
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.waiting = nil
		s.mu.Unlock()
	}()
	timeout := s.m.ConsentTimeout
	if timeout <= 0 {
		timeout = DefaultConsentTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s.m.Log.Warn("the server needs your authorization: a browser window asks for it (else open this address)",
		"server", s.name, "url", args.URL, "waits", timeout)
	open := s.m.OpenBrowser
	if open == nil {
		open = openBrowser
	}
	if err := open(ctx, args.URL); err != nil {
		s.m.Log.Warn("no browser could be opened; open the address by hand", "server", s.name, "err", err)
	}
	select {
	case q := <-got:
		if e := q.Get("error"); e != "" {
			return nil, fmt.Errorf("the authorization was refused: %s", e)
		}
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("no authorization within %s", timeout)
	}
}

// callback is the loopback redirect's page.
func (s *server) callback(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	got := s.waiting
	s.mu.Unlock()
	if got == nil {
		http.Error(w, "aqlguard is not waiting for an authorization", http.StatusGone)
		return
	}
	select {
	case got <- r.URL.Query():
	default:
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "aqlguard: the authorization for %s is done; you can close this window.\n", s.name)
}

// openBrowser opens u in the user's browser.
func openBrowser(ctx context.Context, u string) error {
	if b := os.Getenv("BROWSER"); b != "" {
		return exec.CommandContext(ctx, b, u).Start()
	}
	switch runtime.GOOS {
	case "darwin":
		return exec.CommandContext(ctx, "open", u).Start()
	case "windows":
		return exec.CommandContext(ctx, "rundll32", "url.dll,FileProtocolHandler", u).Start()
	}
	return exec.CommandContext(ctx, "xdg-open", u).Start()
}

// transport puts the server's token on each request and authorizes when
// the server asks for it.
type transport struct {
	s    *server
	base http.RoundTripper
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.send(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return resp, err
	}
	if r.Body != nil && r.GetBody == nil {
		return resp, nil // cannot be sent again
	}
	t.s.authMu.Lock()
	err = t.s.handler.Authorize(r.Context(), r, resp) // closes resp's body
	t.s.authMu.Unlock()
	if err != nil {
		err = t.s.clean(err)
		t.s.m.Log.Error("the server's authorization failed", "server", t.s.name, "err", err)
		return nil, fmt.Errorf("authorizing with the server: %w", err)
	}
	again := r.Clone(r.Context())
	if r.GetBody != nil {
		if again.Body, err = r.GetBody(); err != nil {
			return nil, err
		}
	}
	return t.send(again)
}

func (t *transport) send(r *http.Request) (*http.Response, error) {
	ts, _ := t.s.handler.TokenSource(r.Context())
	if ts != nil {
		tok, err := ts.Token()
		if err != nil {
			// A refresh the server refused: the request goes without, and
			// its 401 starts an authorization.
			t.s.m.Log.Warn("the token could not be refreshed", "server", t.s.name, "err", err)
		} else {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		}
	}
	return t.base.RoundTrip(r)
}
