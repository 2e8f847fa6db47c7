// Package testidp is a test identity provider: a real RSA key pair whose
// public half is served as a JWKS on a loopback HTTP server, and the JWT
// access tokens it signs, for tests of aqlguard serve as an OAuth 2.1
// resource server. It can rotate its key (the old one leaves the set) and
// sign with a key it does not publish (a forged token).
package testidp

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// IdP is the issuer. Its URL is the issuer identifier; the key set is at
// URL + "/jwks".
type IdP struct {
	*httptest.Server
	// Fetches counts requests for the key set.
	Fetches atomic.Int64

	mu  sync.Mutex
	kid string
	key *rsa.PrivateKey
}

// New starts an issuer with one fresh key.
func New() *IdP {
	p := &IdP{}
	p.Rotate()
	mux := http.NewServeMux()
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		p.Fetches.Add(1)
		p.mu.Lock()
		jwk, err := jwkset.NewJWKFromKey(p.key.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{
			KID: p.kid, ALG: jwkset.AlgRS256, USE: jwkset.UseSig}})
		p.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{jwk.Marshal()}})
	})
	p.Server = httptest.NewServer(mux)
	return p
}

// JWKSURL is where the key set is served.
func (p *IdP) JWKSURL() string { return p.URL + "/jwks" }

// Rotate replaces the signing key (and its kid): tokens signed before
// no longer verify once the set has been fetched again.
func (p *IdP) Rotate() {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	p.mu.Lock()
	p.key, p.kid = key, rand.Text()[:8]
	p.mu.Unlock()
}

// Claims are the usual claims of an access token for resource aud:
// issued now, valid for an hour, with scope "mcp".
func (p *IdP) Claims(sub, aud string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{"iss": p.URL, "sub": sub, "aud": aud, "client_id": "test-client", "scope": "mcp",
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

// Sign signs claims with the issuer's key (RS256, its kid).
func (p *IdP) Sign(claims jwt.MapClaims) string {
	p.mu.Lock()
	key, kid := p.key, p.kid
	p.mu.Unlock()
	return sign(claims, key, kid)
}

// SignKid signs claims with the issuer's key under another kid.
func (p *IdP) SignKid(claims jwt.MapClaims, kid string) string {
	p.mu.Lock()
	key := p.key
	p.mu.Unlock()
	return sign(claims, key, kid)
}

// SignHeader signs claims with the issuer's key and kid, with header
// parameters added.
func (p *IdP) SignHeader(claims jwt.MapClaims, header map[string]any) string {
	p.mu.Lock()
	key, kid := p.key, p.kid
	p.mu.Unlock()
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	t.Header["kid"] = kid
	for k, v := range header {
		t.Header[k] = v
	}
	s, err := t.SignedString(key)
	if err != nil {
		panic(err)
	}
	return s
}

// ForgeWithKey signs claims with a key the issuer never published, under
// the issuer's kid, and puts that key's public half in the header (jwk)
// and a key set URL (jku) of the forger's.
func (p *IdP) ForgeWithKey(claims jwt.MapClaims, jku string) string {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	jwk, err := jwkset.NewJWKFromKey(key.Public(), jwkset.JWKOptions{})
	if err != nil {
		panic(err)
	}
	p.mu.Lock()
	kid := p.kid
	p.mu.Unlock()
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	t.Header["kid"] = kid
	t.Header["jwk"] = jwk.Marshal()
	t.Header["jku"] = jku
	s, err := t.SignedString(key)
	if err != nil {
		panic(err)
	}
	return s
}

// Forge signs claims with a key the issuer never published, under the
// issuer's kid.
func (p *IdP) Forge(claims jwt.MapClaims) string {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	p.mu.Lock()
	kid := p.kid
	p.mu.Unlock()
	return sign(claims, key, kid)
}

// Kid is the current key's id.
func (p *IdP) Kid() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.kid
}

// PublicKey is the current public key, for tests that misuse it
// (as an HMAC secret).
func (p *IdP) PublicKey() *rsa.PublicKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	return &p.key.PublicKey
}

func sign(claims jwt.MapClaims, key *rsa.PrivateKey, kid string) string {
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	t.Header["kid"] = kid
	s, err := t.SignedString(key)
	if err != nil {
		panic(err)
	}
	return s
}
