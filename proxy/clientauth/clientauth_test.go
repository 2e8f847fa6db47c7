package clientauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/internal/fixture/testidp"
)

const resource = "http://127.0.0.1:8765/mcp"

func oauthConfig(idp *testidp.IdP) config.ServeOAuth {
	return config.ServeOAuth{Issuer: idp.URL, JWKSURL: idp.JWKSURL(), Resource: resource, Scopes: []string{"mcp"},
		PrincipalClaim: "sub", Algorithms: config.DefaultSignatureAlgorithms}
}

func request(token string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

func TestStaticClients(t *testing.T) {
	tokA, dA := NewToken()
	tokB, dB := NewToken()
	cfg := &config.Config{Agent: "default", Serve: config.Serve{Clients: []config.ServeClient{
		{Name: "alice", TokenSHA256: dA}, {Name: "bob", Agent: "ci", TokenSHA256: dB}}}}
	legacy := strings.Repeat("L", 40)
	a := New(StaticClients(cfg, legacy), cfg.Agent, nil, nil)
	for _, tt := range []struct {
		token string
		want  Identity
	}{
		{tokA, Identity{"alice", "alice"}},
		{tokB, Identity{"ci", "bob"}},
		{legacy, Identity{"default", config.LegacyClient}},
	} {
		got, rf := a.Authenticate(request(tt.token))
		if rf != nil || got != tt.want {
			t.Errorf("got %+v %+v, want %+v", got, rf, tt.want)
		}
	}
	// Revoked: bob's digest gone.
	cfg.Serve.Clients = cfg.Serve.Clients[:1]
	a.SetStatic(StaticClients(cfg, ""), cfg.Agent)
	for _, tok := range []string{tokB, legacy, tokA + "x", strings.ToLower(tokA), ""} {
		if id, rf := a.Authenticate(request(tok)); rf == nil {
			t.Errorf("%q was let in as %+v", tok, id)
		}
	}
}

func TestBearerToken(t *testing.T) {
	for _, tt := range []struct {
		headers []string
		status  int
		code    string
	}{
		{nil, 401, ""},
		{[]string{"Basic abc"}, 401, ""},
		{[]string{"Bearer"}, 401, ""},
		{[]string{"Bearer "}, 400, "invalid_request"},
		{[]string{"Bearer a b"}, 400, "invalid_request"},
		{[]string{"Bearer a\x00"}, 400, "invalid_request"},
		{[]string{"Bearer ok", "Bearer ok"}, 400, "invalid_request"},
		{[]string{"Bearer " + strings.Repeat("a", MaxTokenBytes+1)}, 401, "invalid_token"},
		{[]string{"bearer ok=="}, 0, ""},
		{[]string{"BEARER a.b.c"}, 0, ""},
	} {
		h := http.Header{}
		for _, v := range tt.headers {
			h.Add("Authorization", v)
		}
		_, rf := BearerToken(h)
		status, code := 0, ""
		if rf != nil {
			status, code = rf.Status, rf.Code
		}
		if status != tt.status || code != tt.code {
			t.Errorf("%q: got %d %q, want %d %q", tt.headers, status, code, tt.status, tt.code)
		}
	}
}

// TestJWT: what a hostile caller can send as a bearer JWT, and what the
// resource server must answer.
func TestJWT(t *testing.T) {
	idp := testidp.New()
	defer idp.Close()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, staticDigest := NewToken()
	_, bobDigest := NewToken()
	cfg := &config.Config{Agent: "default", Serve: config.Serve{Clients: []config.ServeClient{{Name: "ci", TokenSHA256: staticDigest},
		{Name: "bob", Agent: "builds", TokenSHA256: bobDigest}}}}
	v := NewJWTVerifier(oauthConfig(idp), nil, log)
	a := New(StaticClients(cfg, ""), cfg.Agent, v, log)

	claims := func(edit func(jwt.MapClaims)) jwt.MapClaims {
		c := idp.Claims("alice", resource)
		if edit != nil {
			edit(c)
		}
		return c
	}
	hs256 := func() string {
		// The issuer's public key, as an HMAC secret (the classic
		// algorithm confusion).
		pub := idp.PublicKey()
		t := jwt.NewWithClaims(jwt.SigningMethodHS256, claims(nil))
		t.Header["kid"] = idp.Kid()
		s, _ := t.SignedString(pub.N.Bytes())
		return s
	}
	none := func() string {
		t := jwt.NewWithClaims(jwt.SigningMethodNone, claims(nil))
		s, _ := t.SignedString(jwt.UnsafeAllowNoneSignatureType)
		return s
	}
	good := idp.Sign(claims(nil))
	parts := strings.Split(good, ".")
	tests := []struct {
		name   string
		token  string
		status int
		code   string
		desc   string
	}{
		{"good", good, 0, "", ""},
		{"expired", idp.Sign(claims(func(c jwt.MapClaims) {
			c["exp"] = time.Now().Add(-time.Hour).Unix()
			c["iat"] = time.Now().Add(-2 * time.Hour).Unix()
			c["nbf"] = c["iat"]
		})), 401, "invalid_token", "expired"},
		{"no exp", idp.Sign(claims(func(c jwt.MapClaims) { delete(c, "exp") })), 401, "invalid_token", "exp"},
		{"not yet", idp.Sign(claims(func(c jwt.MapClaims) { c["nbf"] = time.Now().Add(time.Hour).Unix() })), 401, "invalid_token", "not valid yet"},
		{"wrong audience", idp.Sign(claims(func(c jwt.MapClaims) { c["aud"] = "http://127.0.0.1:9999/mcp" })), 401, "invalid_token", "not for this resource"},
		{"audience list with ours", idp.Sign(claims(func(c jwt.MapClaims) { c["aud"] = []string{"x", resource} })), 0, "", ""},
		{"wrong issuer", idp.Sign(claims(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" })), 401, "invalid_token", "issuer"},
		{"forged signature", idp.Forge(claims(nil)), 401, "invalid_token", "signature"},
		{"alg none", none(), 401, "invalid_token", ""},
		{"a key of its own in jwk and jku", idp.ForgeWithKey(claims(nil), "http://127.0.0.1:1/jwks"), 401, "invalid_token", "signature"},
		{"a critical header", idp.SignHeader(claims(nil), map[string]any{"crit": []string{"exp"}, "exp": 1}), 401, "invalid_token", ""},
		{"HS256 with the public key", hs256(), 401, "invalid_token", ""},
		{"payload swapped", parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"root","aud":"`+resource+`","exp":9999999999,"iss":"`+idp.URL+`","scope":"mcp"}`)) + "." + parts[2], 401, "invalid_token", "signature"},
		{"no scope", idp.Sign(claims(func(c jwt.MapClaims) { delete(c, "scope") })), 403, "insufficient_scope", ""},
		{"other scope", idp.Sign(claims(func(c jwt.MapClaims) { c["scope"] = "mcp:read email" })), 403, "insufficient_scope", ""},
		{"scp list", idp.Sign(claims(func(c jwt.MapClaims) { delete(c, "scope"); c["scp"] = []string{"openid", "mcp"} })), 0, "", ""},
		{"principal of a static client", idp.Sign(claims(func(c jwt.MapClaims) { c["sub"] = "ci" })), 401, "invalid_token", "reserved"},
		{"name of a static client whose principal is another", idp.Sign(claims(func(c jwt.MapClaims) { c["sub"] = "bob" })), 401, "invalid_token", "reserved"},
		{"principal of the configured agent", idp.Sign(claims(func(c jwt.MapClaims) { c["sub"] = "default" })), 401, "invalid_token", "reserved"},
		{"principal not a name", idp.Sign(claims(func(c jwt.MapClaims) { c["sub"] = "../../etc" })), 401, "invalid_token", "sub claim"},
		{"principal not a string", idp.Sign(claims(func(c jwt.MapClaims) { c["sub"] = 7 })), 401, "invalid_token", "sub claim"},
		{"kid injection", idp.SignKid(claims(nil), "../../../../dev/null"), 401, "invalid_token", "signature"},
		{"garbage with two dots", "a.b.c", 401, "invalid_token", "well-formed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, rf := a.Authenticate(request(tt.token))
			if tt.status == 0 {
				if rf != nil {
					t.Fatalf("refused: %+v", rf)
				}
				if id.Principal != "alice" || id.Client != "oauth:test-client" {
					t.Fatalf("identity %+v", id)
				}
				return
			}
			if rf == nil {
				t.Fatalf("let in as %+v", id)
			}
			if rf.Status != tt.status || rf.Code != tt.code || !strings.Contains(rf.Description, tt.desc) {
				t.Fatalf("got %+v, want %d %s %q", rf, tt.status, tt.code, tt.desc)
			}
			w := httptest.NewRecorder()
			a.Challenge(w, rf)
			h := w.Header().Get("WWW-Authenticate")
			if !strings.HasPrefix(h, "Bearer ") || !strings.Contains(h, `resource_metadata="http://127.0.0.1:8765/.well-known/oauth-protected-resource/mcp"`) ||
				!strings.Contains(h, `error="`+tt.code+`"`) {
				t.Fatalf("WWW-Authenticate: %s", h)
			}
			if tt.code == "insufficient_scope" && !strings.Contains(h, `scope="mcp"`) {
				t.Fatalf("WWW-Authenticate without the scope: %s", h)
			}
			if strings.Contains(w.Body.String(), tt.token) || strings.Contains(h, tt.token) {
				t.Fatal("the answer quotes the token")
			}
		})
	}
	for _, tt := range tests {
		for _, part := range strings.Split(tt.token, ".") {
			if len(part) > 16 && strings.Contains(logs.String(), part) {
				t.Errorf("%s: a part of the token is in the log", tt.name)
			}
		}
	}
	// Kid injection and made-up kids do not make a fetch per token.
	before := idp.Fetches.Load()
	for range 20 {
		a.Authenticate(request(idp.SignKid(claims(nil), "made-up")))
	}
	if n := idp.Fetches.Load() - before; n > 1 {
		t.Errorf("20 tokens with an unknown kid made %d fetches of the key set", n)
	}
}

// TestKeyRotation: a token signed by a key the set does not hold yet
// makes one fetch, and then verifies.
func TestKeyRotation(t *testing.T) {
	idp := testidp.New()
	defer idp.Close()
	v := NewJWTVerifier(oauthConfig(idp), nil, nil)
	if _, rf := v.Verify(context.Background(), idp.Sign(idp.Claims("alice", resource))); rf != nil {
		t.Fatal(rf)
	}
	v.keys.tried = time.Now().Add(-time.Minute)  // the last fetch is older than refetchEvery
	old := idp.Sign(idp.Claims("bob", resource)) // never verified, so not remembered
	idp.Rotate()
	if _, rf := v.Verify(context.Background(), idp.Sign(idp.Claims("alice", resource))); rf != nil {
		t.Fatalf("a token of the new key: %+v", rf)
	}
	if _, rf := v.Verify(context.Background(), old); rf == nil {
		t.Fatal("a token of the withdrawn key verified")
	}
}

// TestVerifiedTokensAreRemembered: a token that passed is not verified
// again for a minute, and never past its exp; a refused one is checked
// every time.
func TestVerifiedTokensAreRemembered(t *testing.T) {
	idp := testidp.New()
	defer idp.Close()
	v := NewJWTVerifier(oauthConfig(idp), nil, nil)
	now := time.Now()
	v.now = func() time.Time { return now }
	c := idp.Claims("alice", resource)
	c["exp"] = now.Add(90 * time.Second).Unix()
	tok := idp.Sign(c)
	if _, rf := v.Verify(context.Background(), tok); rf != nil {
		t.Fatal(rf)
	}
	if _, ok := v.verified[sha256.Sum256([]byte(tok))]; !ok {
		t.Fatal("not remembered")
	}
	now = now.Add(59 * time.Second)
	if _, rf := v.Verify(context.Background(), tok); rf != nil {
		t.Fatal(rf)
	}
	// Past the minute: verified again (and still good).
	now = now.Add(2 * time.Second)
	if _, rf := v.Verify(context.Background(), tok); rf != nil {
		t.Fatal(rf)
	}
	if got := v.verified[sha256.Sum256([]byte(tok))].until; !got.Equal(time.Unix(c["exp"].(int64), 0)) {
		t.Errorf("remembered until %v, past exp %v", got, c["exp"])
	}
	// Past exp (and the leeway): refused, remembered or not.
	now = now.Add(90*time.Second + Leeway)
	if _, rf := v.Verify(context.Background(), tok); rf == nil || !strings.Contains(rf.Description, "expired") {
		t.Fatalf("an expired token: %+v", rf)
	}
}

func TestMetadata(t *testing.T) {
	idp := testidp.New()
	defer idp.Close()
	v := NewJWTVerifier(oauthConfig(idp), nil, nil)
	if got := v.MetadataPaths(); len(got) != 2 || got[0] != "/.well-known/oauth-protected-resource/mcp" {
		t.Fatalf("paths %v", got)
	}
	w := httptest.NewRecorder()
	v.MetadataHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, got0(v), nil))
	body := w.Body.String()
	for _, want := range []string{`"resource":"` + resource + `"`, `"authorization_servers":["` + idp.URL + `"]`, `"scopes_supported":["mcp"]`} {
		if !strings.Contains(body, want) {
			t.Errorf("metadata %s lacks %s", body, want)
		}
	}
}

func got0(v *JWTVerifier) string { return v.MetadataPaths()[0] }

var fixedDescriptions = map[string]bool{
	"send Authorization: Bearer <token>":             true,
	"more than one Authorization header":             true,
	"the token is too long":                          true,
	"the Authorization header is not a bearer token": true,
}

func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer a.b.c", "Basic x", "Bearer  x==", "Bearer x=y", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{}
		h.Set("Authorization", v)
		tok, rf := BearerToken(h)
		if rf == nil {
			if !isB64Token(tok) || len(tok) > MaxTokenBytes || strings.ContainsAny(tok, " \t\r\n\"\\") {
				t.Fatalf("%q accepted as %q", v, tok)
			}
		} else if !fixedDescriptions[rf.Description] {
			t.Fatalf("the refusal says %q: not a fixed text", rf.Description)
		}
	})
}

// BenchmarkAuthenticate: what authentication adds to a request, for a
// static token among 50 clients and for a JWT (RS256).
func BenchmarkAuthenticate(b *testing.B) {
	idp := testidp.New()
	defer idp.Close()
	cfg := &config.Config{Agent: "default"}
	var last string
	for i := range 50 {
		tok, d := NewToken()
		cfg.Serve.Clients = append(cfg.Serve.Clients, config.ServeClient{Name: "c" + strconv.Itoa(i), TokenSHA256: d})
		last = tok
	}
	v := NewJWTVerifier(oauthConfig(idp), nil, nil)
	a := New(StaticClients(cfg, ""), cfg.Agent, v, nil)
	jwtToken := idp.Sign(idp.Claims("alice", resource))
	b.Run("jwt-rs256-unremembered", func(b *testing.B) {
		for b.Loop() {
			if _, _, rf := v.verify(context.Background(), jwtToken); rf != nil {
				b.Fatal(rf)
			}
		}
	})
	for _, tt := range []struct{ name, token string }{{"static-of-50", last}, {"jwt-rs256", idp.Sign(idp.Claims("alice", resource))}} {
		r := request(tt.token)
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				if _, rf := a.Authenticate(r); rf != nil {
					b.Fatal(rf)
				}
			}
		})
	}
}
