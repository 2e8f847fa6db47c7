// Package oauthtest is a small OAuth 2.1 authorization server and an MCP
// server it protects, for aqlguard's end-to-end tests of remote servers:
// real tokens (crypto/rand), real PKCE (S256, checked), dynamic client
// registration, a consent page a test's "browser" approves, refresh
// tokens (rotated), and a Streamable HTTP MCP server that takes only a
// live access token and points clients at its metadata on a 401.
package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server is the authorization server and the protected MCP server, on
// one loopback origin.
type Server struct {
	*httptest.Server
	// TokenLife is how long an access token lives.
	TokenLife time.Duration

	mu        sync.Mutex
	clients   map[string][]string // client id → redirect URIs
	codes     map[string]grant
	access    map[string]time.Time // token → expiry
	refresh   map[string]string    // refresh token → client id
	Issued    []string             // every token handed out, for tests that look for leaks
	Refreshes int
	Consents  int
	Calls     int
}

type grant struct {
	client, redirect, challenge string
}

// New starts a Server whose tool "whoami" answers "authorized".
func New() *Server {
	s := &Server{TokenLife: time.Hour, clients: map[string][]string{}, codes: map[string]grant{},
		access: map[string]time.Time{}, refresh: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", s.resourceMetadata)
	mux.HandleFunc("/.well-known/oauth-protected-resource", s.resourceMetadata)
	mux.HandleFunc("/.well-known/oauth-authorization-server", s.authServerMetadata)
	mux.HandleFunc("/register", s.register)
	mux.HandleFunc("/authorize", s.authorize)
	mux.HandleFunc("/token", s.token)
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami", Description: "Says whether the caller is authorized.",
		InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.mu.Lock()
			s.Calls++
			s.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "authorized"}}}, nil
		})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux.Handle("/mcp", s.protect(mcpHandler))
	s.Server = httptest.NewServer(mux)
	return s
}

// URL of the protected MCP endpoint.
func (s *Server) MCP() string { return s.Server.URL + "/mcp" }

func newToken() string { return rand.Text() + rand.Text() }

func (s *Server) protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		exp, ok := s.access[tok]
		s.mu.Unlock()
		if !ok || time.Now().After(exp) {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+s.Server.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) resourceMetadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{"resource": s.MCP(), "authorization_servers": []string{s.Server.URL}, "scopes_supported": []string{"mcp"}})
}

func (s *Server) authServerMetadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{"issuer": s.Server.URL, "authorization_endpoint": s.Server.URL + "/authorize",
		"token_endpoint": s.Server.URL + "/token", "registration_endpoint": s.Server.URL + "/register",
		"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
		"scopes_supported": []string{"mcp", "offline_access"}})
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var m struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	if json.NewDecoder(r.Body).Decode(&m) != nil || len(m.RedirectURIs) == 0 {
		http.Error(w, `{"error":"invalid_client_metadata"}`, http.StatusBadRequest)
		return
	}
	id := "client-" + rand.Text()
	s.mu.Lock()
	s.clients[id] = m.RedirectURIs
	s.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
	writeJSON(w, map[string]any{"client_id": id, "redirect_uris": m.RedirectURIs, "token_endpoint_auth_method": "none"})
}

// authorize shows a consent form (GET) and, when it is approved (POST),
// redirects with a code bound to the PKCE challenge.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		_ = r.ParseForm()
		q = r.PostForm
	}
	s.mu.Lock()
	uris, known := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	redirect := q.Get("redirect_uri")
	switch {
	case !known || !contains(uris, redirect):
		http.Error(w, "unknown client or redirect", http.StatusBadRequest)
		return
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		http.Error(w, "PKCE (S256) is required", http.StatusBadRequest)
		return
	case q.Get("response_type") != "code":
		http.Error(w, "response_type must be code", http.StatusBadRequest)
		return
	}
	if r.Method != http.MethodPost || q.Get("approve") != "yes" {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<form method="post" action="/authorize">`)
		for k := range q {
			fmt.Fprintf(w, `<input type="hidden" name="%s" value="%s">`, k, q.Get(k))
		}
		fmt.Fprint(w, `<button name="approve" value="yes">Allow</button></form>`)
		return
	}
	code := rand.Text()
	s.mu.Lock()
	s.codes[code] = grant{client: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge")}
	s.Consents++
	s.mu.Unlock()
	to, _ := url.Parse(redirect)
	v := to.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	to.RawQuery = v.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	fail := func(e string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":%q}`, e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var client string
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		g, ok := s.codes[r.PostForm.Get("code")]
		delete(s.codes, r.PostForm.Get("code")) // one use
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		switch {
		case !ok:
			fail("invalid_grant")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
			fail("invalid_grant") // PKCE: the verifier does not match the challenge
			return
		case r.PostForm.Get("redirect_uri") != g.redirect || r.PostForm.Get("client_id") != g.client:
			fail("invalid_grant")
			return
		}
		client = g.client
	case "refresh_token":
		c, ok := s.refresh[r.PostForm.Get("refresh_token")]
		delete(s.refresh, r.PostForm.Get("refresh_token")) // rotated
		if !ok {
			fail("invalid_grant")
			return
		}
		client = c
		s.Refreshes++
	default:
		fail("unsupported_grant_type")
		return
	}
	access, refresh := newToken(), newToken()
	s.access[access] = time.Now().Add(s.TokenLife)
	s.refresh[refresh] = client
	s.Issued = append(s.Issued, access, refresh)
	writeJSON(w, map[string]any{"access_token": access, "token_type": "Bearer", "refresh_token": refresh,
		"expires_in": int(s.TokenLife / time.Second), "scope": "mcp"})
}
