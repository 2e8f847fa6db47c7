package clientauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

const (
	// keysMaxAge is how long a fetched key set is used before it is
	// fetched again (keys the issuer withdrew stop verifying by then).
	keysMaxAge = time.Hour
	// refetchEvery bounds fetches for keys the set does not hold: tokens
	// naming made-up key ids cannot make aqlguard hammer the issuer.
	refetchEvery = 30 * time.Second
	// maxKeySetBytes bounds the JWKS document.
	maxKeySetBytes = 1 << 20
)

// KeySet is the issuer's signing keys, fetched from its JWKS URL and
// kept: fetched again when older than an hour, and when a token names a
// key id the set does not hold (at most every 30 seconds). When a fetch
// fails, the keys of the last good fetch stay in use.
type KeySet struct {
	url    string
	client *http.Client
	log    *slog.Logger
	now    func() time.Time

	mu      sync.Mutex // held across a fetch: one fetch at a time
	keys    map[string]jwkset.JWK
	fetched time.Time // of the last good fetch
	tried   time.Time // of the last fetch, good or not
}

// NewKeySet reads the key set at url through client (nil: a client
// with a 10-second timeout).
func NewKeySet(url string, client *http.Client, log *slog.Logger) *KeySet {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	return &KeySet{url: url, client: client, log: log, now: time.Now}
}

// Refresh fetches the key set now.
func (k *KeySet) Refresh(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fetch(ctx)
}

// Key is the key that verifies t: the one its kid names (or the only
// key, when t names none), of a type and algorithm fit for t's alg. Keys
// the token brings or points to (jwk, jku, x5u, x5c) are never used.
func (k *KeySet) Key(ctx context.Context, t *jwt.Token) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		// RFC 7515 §4.1.11: an extension the recipient must understand;
		// none is understood here.
		return nil, errors.New("the token names critical header parameters")
	}
	kid, _ := t.Header["kid"].(string)
	if _, named := t.Header["kid"]; named && kid == "" {
		return nil, errors.New("kid is not a string")
	}
	jwk, err := k.find(ctx, kid)
	if err != nil {
		return nil, err
	}
	m := jwk.Marshal()
	if m.USE != "" && m.USE != jwkset.UseSig {
		return nil, errors.New("the key is not for signatures")
	}
	alg := t.Method.Alg()
	if m.ALG != "" && string(m.ALG) != alg {
		return nil, errors.New("the key is for another algorithm")
	}
	key := jwk.Key()
	if !fits(alg, key) {
		return nil, errors.New("the key does not fit the token's algorithm")
	}
	return key, nil
}

// fits says whether key is a public key of the family alg names: an
// RSA key never verifies an ECDSA token, and nothing here is an HMAC
// secret (policy allows asymmetric algorithms only).
func fits(alg string, key any) bool {
	switch key.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		return strings.HasPrefix(alg, "ES")
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}

func (k *KeySet) find(ctx context.Context, kid string) (jwkset.JWK, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	if k.keys == nil || now.Sub(k.fetched) > keysMaxAge {
		if now.Sub(k.tried) >= refetchEvery || k.keys == nil && k.tried.IsZero() {
			if err := k.fetch(ctx); err != nil {
				k.log.Warn("the identity provider's keys could not be fetched; the last ones stay in use", "jwks_url", k.url, "err", err)
			}
		}
	}
	if jwk, ok := k.lookup(kid); ok {
		return jwk, nil
	}
	if kid != "" && now.Sub(k.tried) >= refetchEvery {
		// A key the set does not hold: the issuer may have rotated.
		if err := k.fetch(ctx); err != nil {
			k.log.Warn("the identity provider's keys could not be fetched", "jwks_url", k.url, "err", err)
		}
		if jwk, ok := k.lookup(kid); ok {
			return jwk, nil
		}
	}
	return jwkset.JWK{}, errors.New("no key of the issuer has that id")
}

func (k *KeySet) lookup(kid string) (jwkset.JWK, bool) {
	if kid == "" {
		if len(k.keys) != 1 {
			return jwkset.JWK{}, false
		}
		for _, only := range k.keys {
			return only, true
		}
	}
	jwk, ok := k.keys[kid]
	return jwk, ok
}

// fetch reads the key set; k.mu is held.
func (k *KeySet) fetch(ctx context.Context) error {
	k.tried = k.now()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxKeySetBytes+1))
	if err != nil {
		return err
	}
	if len(data) > maxKeySetBytes {
		return fmt.Errorf("the key set is larger than %d bytes", maxKeySetBytes)
	}
	var set jwkset.JWKSMarshal
	if err := json.Unmarshal(data, &set); err != nil {
		return fmt.Errorf("the key set is not JSON: %w", err)
	}
	keys := map[string]jwkset.JWK{}
	for _, m := range set.Keys {
		if m.KTY == jwkset.KtyOct {
			continue // a shared secret is never a verification key here
		}
		// Private: false: a published private part is not read.
		jwk, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
		if err != nil {
			k.log.Debug("a key of the set was skipped", "kid", m.KID, "err", err)
			continue
		}
		keys[m.KID] = jwk
	}
	if len(keys) == 0 {
		return errors.New("the key set holds no usable signing key")
	}
	k.keys, k.fetched = keys, k.now()
	return nil
}
