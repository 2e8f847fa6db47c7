package verify

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Challenge errors. None of them carries the code.
var (
	ErrExpired   = errors.New("verification challenge expired")
	ErrUsed      = errors.New("verification challenge already used")
	ErrWrongCode = errors.New("verification code does not match")
)

// crockford is Crockford's base32 alphabet: no I, L, O or U, so a code
// read aloud or typed from a screen is hard to get wrong.
var crockford = base32.NewEncoding("0123456789ABCDEFGHJKMNPQRSTVWXYZ").WithPadding(base32.NoPadding)

// Challenge is one out-of-band verification. It keeps only a salted hash
// of its code; the code itself goes to the display channel and nowhere
// else.
type Challenge struct {
	ID        string
	Agent     string
	Action    string
	Tier      string
	CreatedAt time.Time
	ExpiresAt time.Time
	Used      bool

	salt []byte
	hash []byte
}

// NewChallenge draws a 128-bit code from crypto/rand and returns the
// challenge and the code, rendered in groups for reading.
func NewChallenge(agent, action, tier string, now time.Time, ttl time.Duration) (*Challenge, string, error) {
	raw := make([]byte, 16)
	salt := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return nil, "", fmt.Errorf("drawing a verification code: %w", err)
	}
	if _, err := rand.Read(salt); err != nil {
		return nil, "", fmt.Errorf("drawing a salt: %w", err)
	}
	id, err := newUUID()
	if err != nil {
		return nil, "", err
	}
	plain := crockford.EncodeToString(raw) // 26 characters
	c := &Challenge{ID: id, Agent: agent, Action: action, Tier: tier, CreatedAt: now, ExpiresAt: now.Add(ttl),
		salt: salt, hash: digest(salt, plain)}
	return c, group(plain), nil
}

func group(s string) string {
	var parts []string
	for len(s) > 5 {
		parts = append(parts, s[:5])
		s = s[5:]
	}
	return strings.Join(append(parts, s), "-")
}

func digest(salt []byte, normalized string) []byte {
	h := sha256.New()
	h.Write(salt)
	h.Write([]byte(normalized))
	return h.Sum(nil)
}

// NormalizeCode makes typing forgiving: case, hyphens and spaces do not
// matter, and the letters Crockford's alphabet leaves out read as the
// digits they look like.
func NormalizeCode(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		switch r {
		case '-', ' ', '\t':
			continue
		case 'O':
			r = '0'
		case 'I', 'L':
			r = '1'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Check verifies code at time now. The comparison of hashes is constant
// time; a success marks the challenge used.
func (c *Challenge) Check(code string, now time.Time) error {
	if c.Used {
		return ErrUsed
	}
	if !now.Before(c.ExpiresAt) {
		return ErrExpired
	}
	if subtle.ConstantTimeCompare(digest(c.salt, NormalizeCode(code)), c.hash) != 1 {
		return ErrWrongCode
	}
	c.Used = true
	return nil
}

// String never shows the code's hash or salt.
func (c *Challenge) String() string {
	return fmt.Sprintf("challenge %s for %s (%s, expires %s)", c.ID, c.Agent, c.Tier, c.ExpiresAt.Format(time.RFC3339))
}

// GoString keeps %#v from printing the hash.
func (c *Challenge) GoString() string { return c.String() }

func newUUID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("drawing a challenge id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]), nil
}
