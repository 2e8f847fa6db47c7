// Package clientauth says who an HTTP request to `aqlguard serve` comes
// from: a static client (a token of [[serve.clients]], or the single
// serve token), or an OAuth 2.1 bearer JWT from the team's identity
// provider, as the MCP authorization spec describes a resource server.
// Each credential maps to a principal (whose blocks, steps, approvals
// and failure budget apply) and a client (named in the audit log).
//
// Nothing here keeps a token: static tokens are known by their SHA-256
// only and compared in constant time; a refusal's text is a fixed
// template, never the token or a parser's error.
package clientauth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/aqlguard/aqlguard/config"
)

// Identity is who a request comes from.
type Identity struct {
	// Principal owns the blocks, steps, approvals and failure budget the
	// request's calls meet.
	Principal string
	// Client names the credential in the audit log: a [[serve.clients]]
	// name, config.LegacyClient, or "oauth:" and the token's client.
	Client string
}

// OAuthClientPrefix starts the client name of a JWT's caller, so that no
// token claim can name itself like a static client (whose names have no
// ':').
const OAuthClientPrefix = "oauth:"

// Refusal is why a request was not let in: the HTTP status and the
// RFC 6750 error code and description the WWW-Authenticate header
// carries.
type Refusal struct {
	Status int
	// Code is "invalid_request", "invalid_token", "insufficient_scope",
	// or "" when the request carried no credentials (RFC 6750 §3.1).
	Code string
	// Description is a fixed text: it never quotes the token.
	Description string
}

func invalidToken(why string) *Refusal {
	return &Refusal{Status: http.StatusUnauthorized, Code: "invalid_token", Description: why}
}

// MaxTokenBytes bounds a bearer token: more is refused before any
// parsing (a JWT from an identity provider is a few KiB at most).
const MaxTokenBytes = 8 << 10

// Static is one static credential, by the SHA-256 of its token.
type Static struct {
	Digest    [sha256.Size]byte
	Principal string
	Client    string
}

// StaticClients is the static credentials of a configuration: each of
// [[serve.clients]], and the single serve token when legacy is not ""
// (its principal the configured agent).
func StaticClients(cfg *config.Config, legacy string) []Static {
	var out []Static
	if legacy != "" {
		out = append(out, Static{Digest: sha256.Sum256([]byte(legacy)), Principal: cfg.Agent, Client: config.LegacyClient})
	}
	for _, c := range cfg.Serve.Clients {
		var d [sha256.Size]byte
		if n, err := hex.Decode(d[:], []byte(c.TokenSHA256)); err != nil || n != len(d) {
			continue // validation refused the file already
		}
		p := c.Agent
		if p == "" {
			p = c.Name
		}
		out = append(out, Static{Digest: d, Principal: p, Client: c.Name})
	}
	return out
}

// Authenticator checks every request's credentials.
type Authenticator struct {
	static atomic.Pointer[[]Static]
	// reserved are the static clients' principals and names (and the
	// configured agent): a JWT's principal claim naming one of them is
	// refused, so an identity provider's user never shares a static
	// client's blocks, nor takes a name an operator reads as a client's.
	reserved atomic.Pointer[map[string]bool]
	jwt      *JWTVerifier
	log      *slog.Logger
}

// New returns an authenticator of the static credentials and, when jwt
// is not nil, of the identity provider's tokens.
func New(static []Static, agent string, jwt *JWTVerifier, log *slog.Logger) *Authenticator {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Authenticator{jwt: jwt, log: log}
	a.SetStatic(static, agent)
	return a
}

// SetStatic puts a new set of static credentials in force (a reload): a
// token no longer among them is refused from the next request on.
func (a *Authenticator) SetStatic(static []Static, agent string) {
	reserved := map[string]bool{agent: true}
	for _, s := range static {
		reserved[s.Principal] = true
		reserved[s.Client] = true
	}
	a.static.Store(&static)
	a.reserved.Store(&reserved)
}

// OAuth is the verifier of the identity provider's tokens, or nil.
func (a *Authenticator) OAuth() *JWTVerifier { return a.jwt }

// Authenticate says who r comes from, or why it is refused.
func (a *Authenticator) Authenticate(r *http.Request) (Identity, *Refusal) {
	token, rf := BearerToken(r.Header)
	if rf != nil {
		return Identity{}, rf
	}
	if id, ok := a.matchStatic(token); ok {
		return id, nil
	}
	if a.jwt == nil || strings.Count(token, ".") != 2 {
		return Identity{}, invalidToken("the token is not one this server accepts")
	}
	id, rf := a.jwt.Verify(r.Context(), token)
	if rf != nil {
		return Identity{}, rf
	}
	if (*a.reserved.Load())[id.Principal] {
		a.log.Warn("an OAuth token was refused: its principal is a static client's", "principal", id.Principal, "client", id.Client)
		return Identity{}, invalidToken("the token's principal is reserved for a static client of this server")
	}
	return id, nil
}

// matchStatic compares the token's digest with every static client's, in
// constant time and without stopping at a match, so neither the time
// nor the order says which client (if any) it was.
func (a *Authenticator) matchStatic(token string) (Identity, bool) {
	d := sha256.Sum256([]byte(token))
	var found Identity
	ok := 0
	for _, s := range *a.static.Load() {
		eq := subtle.ConstantTimeCompare(d[:], s.Digest[:])
		if eq == 1 && ok == 0 {
			found = Identity{Principal: s.Principal, Client: s.Client}
		}
		ok |= eq
	}
	return found, ok == 1
}

// BearerToken reads the one Authorization header of a request as an RFC
// 6750 bearer token (the scheme's case ignored; the token of the b64token
// characters, at most MaxTokenBytes).
func BearerToken(h http.Header) (string, *Refusal) {
	vals := h.Values("Authorization")
	switch len(vals) {
	case 0:
		return "", &Refusal{Status: http.StatusUnauthorized, Description: "send Authorization: Bearer <token>"}
	case 1:
	default:
		return "", &Refusal{Status: http.StatusBadRequest, Code: "invalid_request", Description: "more than one Authorization header"}
	}
	v := vals[0]
	if len(v) > len("Bearer ")+MaxTokenBytes {
		return "", invalidToken("the token is too long")
	}
	scheme, token, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", &Refusal{Status: http.StatusUnauthorized, Description: "send Authorization: Bearer <token>"}
	}
	token = strings.TrimLeft(token, " ")
	if !isB64Token(token) {
		return "", &Refusal{Status: http.StatusBadRequest, Code: "invalid_request", Description: "the Authorization header is not a bearer token"}
	}
	return token, nil
}

// isB64Token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
func isB64Token(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '.', c == '_', c == '~', c == '+', c == '/':
		default:
			return false
		}
	}
	return true
}

// Challenge answers a refused request: its status, and the
// WWW-Authenticate header the MCP authorization spec names (Bearer, with
// resource_metadata when an identity provider is configured, the error
// code, and for insufficient_scope the scopes needed).
func (a *Authenticator) Challenge(w http.ResponseWriter, rf *Refusal) {
	params := []string{`realm="aqlguard"`}
	if a.jwt != nil {
		params = append(params, fmt.Sprintf("resource_metadata=%q", a.jwt.MetadataURL()))
	}
	if rf.Code != "" {
		params = append(params, fmt.Sprintf("error=%q", rf.Code), fmt.Sprintf("error_description=%q", rf.Description))
	}
	if a.jwt != nil && (rf.Code == "insufficient_scope" || rf.Code == "") {
		params = append(params, fmt.Sprintf("scope=%q", strings.Join(a.jwt.cfg.Scopes, " ")))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	text := http.StatusText(rf.Status) + ": " + rf.Description
	http.Error(w, text, rf.Status)
}

// NewToken is a fresh client token: "aqlg_" and 52 base32 characters
// (260 bits from crypto/rand), and its SHA-256 as config writes it.
func NewToken() (token, digest string) {
	token = "aqlg_" + rand.Text() + rand.Text()
	return token, Digest(token)
}

// Digest is a token's SHA-256 as [[serve.clients]] token_sha256 holds it.
// A token has 260 random bits, so a fast hash keeps it as safe as a slow
// one would.
func Digest(token string) string {
	d := sha256.Sum256([]byte(token))
	return hex.EncodeToString(d[:])
}
