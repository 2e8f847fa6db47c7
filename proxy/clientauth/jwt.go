package clientauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/aqlguard/aqlguard/config"
)

// Leeway is the clock skew allowed on exp, nbf and iat.
const Leeway = 30 * time.Second

// JWTVerifier checks the identity provider's access tokens: the signature
// (by a key of the issuer's JWKS, with an allowed algorithm), iss, aud
// (this resource), exp and nbf, and the scopes; the principal is the
// configured claim. Parsing and signature checks are golang-jwt's; the
// keys are read by jwkset (keys.go).
type JWTVerifier struct {
	cfg    config.ServeOAuth
	keys   *KeySet
	parser *jwt.Parser
	log    *slog.Logger
	now    func() time.Time

	// verified remembers tokens that passed, by SHA-256, for at most
	// verifiedFor and never past their exp: a client sends the same
	// token with every request, and a signature check is most of what
	// authentication costs.
	mu       sync.Mutex
	verified map[[sha256.Size]byte]verifiedToken
}

type verifiedToken struct {
	id    Identity
	until time.Time
}

const (
	// verifiedFor bounds how long a verified token is trusted without
	// its signature being checked again (a withdrawn key stops
	// verifying its tokens within this).
	verifiedFor = time.Minute
	// maxVerified bounds the remembered tokens.
	maxVerified = 4096
)

// NewJWTVerifier verifies tokens as cfg (validated) says; the keys are
// fetched when first needed, and again when a token names a key the set
// does not hold.
func NewJWTVerifier(cfg config.ServeOAuth, client *http.Client, log *slog.Logger) *JWTVerifier {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	aud := cfg.Resource
	if cfg.Audience != "" {
		aud = cfg.Audience
	}
	v := &JWTVerifier{cfg: cfg, keys: NewKeySet(cfg.JWKSURL, client, log), log: log, now: time.Now}
	v.parser = jwt.NewParser(
		jwt.WithValidMethods(cfg.Algorithms),
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithAudience(aud),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(Leeway),
		jwt.WithTimeFunc(func() time.Time { return v.now() }),
	)
	return v
}

// Keys is the verifier's key set (for a first fetch at start).
func (v *JWTVerifier) Keys() *KeySet { return v.keys }

// Verify checks a token and says whose it is.
func (v *JWTVerifier) Verify(ctx context.Context, token string) (Identity, *Refusal) {
	digest := sha256.Sum256([]byte(token))
	now := v.now()
	v.mu.Lock()
	vt, ok := v.verified[digest]
	v.mu.Unlock()
	if ok && now.Before(vt.until) {
		return vt.id, nil
	}
	id, exp, rf := v.verify(ctx, token)
	if rf != nil {
		return Identity{}, rf
	}
	until := now.Add(verifiedFor)
	if exp.Before(until) {
		until = exp
	}
	v.mu.Lock()
	if len(v.verified) >= maxVerified {
		for d, old := range v.verified {
			if !now.Before(old.until) || len(v.verified) >= maxVerified {
				delete(v.verified, d)
			}
		}
	}
	if v.verified == nil {
		v.verified = map[[sha256.Size]byte]verifiedToken{}
	}
	v.verified[digest] = verifiedToken{id: id, until: until}
	v.mu.Unlock()
	return id, nil
}

// verify checks a token in full and returns whose it is and until when.
func (v *JWTVerifier) verify(ctx context.Context, token string) (Identity, time.Time, *Refusal) {
	claims := jwt.MapClaims{}
	_, err := v.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		return v.keys.Key(ctx, t)
	})
	if err != nil {
		why := refusalText(err)
		v.log.Info("an OAuth token was refused", "why", why)
		return Identity{}, time.Time{}, invalidToken(why)
	}
	granted := scopesOf(claims)
	for _, s := range v.cfg.Scopes {
		if !slices.Contains(granted, s) {
			return Identity{}, time.Time{}, &Refusal{Status: http.StatusForbidden, Code: "insufficient_scope",
				Description: "the token does not grant the scopes this server needs"}
		}
	}
	principal, _ := claims[v.cfg.PrincipalClaim].(string)
	if !config.ValidAgentName(principal) {
		v.log.Warn("an OAuth token was refused: its principal claim is missing or not a valid principal name",
			"claim", v.cfg.PrincipalClaim)
		return Identity{}, time.Time{}, invalidToken("the token's " + v.cfg.PrincipalClaim + " claim is not a principal name this server accepts")
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil {
		return Identity{}, time.Time{}, invalidToken("the token lacks a required claim (exp)")
	}
	return Identity{Principal: principal, Client: OAuthClientPrefix + v.clientOf(claims)}, exp.Time, nil
}

// clientOf is the token's client for the audit log: the configured claim,
// else client_id (RFC 9068), else azp; "" when none is a string.
func (v *JWTVerifier) clientOf(claims jwt.MapClaims) string {
	names := []string{"client_id", "azp"}
	if v.cfg.ClientClaim != "" {
		names = []string{v.cfg.ClientClaim}
	}
	for _, n := range names {
		if s, ok := claims[n].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// scopesOf reads scope (a space-separated string, RFC 9068 and 8693) or
// scp (a list, or one string, as some providers write it).
func scopesOf(claims jwt.MapClaims) []string {
	if s, ok := claims["scope"].(string); ok {
		return strings.Fields(s)
	}
	switch scp := claims["scp"].(type) {
	case string:
		return strings.Fields(scp)
	case []any:
		var out []string
		for _, x := range scp {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// refusalText is a fixed description for a parse or validation failure:
// never the library's own text, which may quote the token's parts.
func refusalText(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return "the token has expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "the token is not valid yet"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "the token is not for this resource"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "the token's issuer is not the one this server trusts"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "the token lacks a required claim (exp)"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return "the token's signature does not verify with the issuer's keys"
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "the token is not a well-formed JWT"
	}
	return "the token is not valid"
}

// MetadataURL is where this resource's protected resource metadata is
// (RFC 9728 §3.1: the well-known path put before the resource's path).
func (v *JWTVerifier) MetadataURL() string {
	u, err := url.Parse(v.cfg.Resource)
	if err != nil {
		return ""
	}
	u.Path = "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")
	u.RawPath, u.RawQuery = "", ""
	return u.String()
}

// MetadataPaths are the paths the metadata is served at: the RFC 9728
// one for the resource, and the root one clients also try.
func (v *JWTVerifier) MetadataPaths() []string {
	u, err := url.Parse(v.MetadataURL())
	if err != nil || u.Path == "/.well-known/oauth-protected-resource" {
		return []string{"/.well-known/oauth-protected-resource"}
	}
	return []string{u.Path, "/.well-known/oauth-protected-resource"}
}

// MetadataHandler serves the protected resource metadata (the go-sdk's
// handler): this resource, its authorization server, the scopes.
func (v *JWTVerifier) MetadataHandler() http.Handler {
	return auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               v.cfg.Resource,
		AuthorizationServers:   []string{v.cfg.Issuer},
		ScopesSupported:        v.cfg.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "aqlguard",
	})
}
