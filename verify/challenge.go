package verify

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Challenge errors. None of them carries the code, so they can go into
// logs and MCP responses as they are.
var (
	ErrExpired   = errors.New("verification challenge expired")
	ErrUsed      = errors.New("verification challenge already used")
	ErrWrongCode = errors.New("verification code does not match")
)

const (
	// codeBytes is the entropy of a code: 128 bits (spec 8.8.2 asks for at
	// least that much).
	codeBytes = 16
	// maxCodeInput bounds what Check is willing to normalise and hash: a
	// code is 26 digits plus separators, anything much longer is a wrong
	// code, and we need not hash megabytes to say so.
	maxCodeInput = 256
)

// codeGroups is how a code is split for reading. 128 bits take 26
// five-bit digits (the last carries 3 bits and two zero bits); 4-4-4-4-5-5
// adds up to 26, and no group is long enough to lose one's place in.
var codeGroups = [...]int{4, 4, 4, 4, 5, 5}

// crockford is Crockford's base32 alphabet: no I, L, O or U, so a code
// read aloud or typed from a screen is hard to get wrong, and the letters
// people confuse with digits can be accepted for them (NormalizeCode).
var crockford = base32.NewEncoding("0123456789ABCDEFGHJKMNPQRSTVWXYZ").WithPadding(base32.NoPadding)

// Challenge is one out-of-band verification (spec 8.8.2). It keeps only a
// salted SHA-256 of its normalised code; the code itself goes from
// NewChallenge to the display channel and nowhere else.
//
// A Challenge never prints or serialises its salt or hash: String,
// GoString, Format, MarshalJSON and LogValue show only the public fields.
// Check is not safe for concurrent use: one-time use holds because the
// owner serialises the checks of a challenge (the safety loop holds its
// mutex around Check).
type Challenge struct {
	ID        string // UUIDv4; the only handle the model ever sees
	Agent     string // the principal the challenge belongs to
	Action    string
	Tier      string
	CreatedAt time.Time
	ExpiresAt time.Time
	Used      bool

	salt []byte // 16 random bytes, fresh per challenge
	hash []byte // SHA-256(salt || NormalizeCode(code))
}

// NewChallenge draws a fresh code and id from crypto/rand and returns the
// challenge (expiring ttl after now) and the code in grouped Crockford
// base32, e.g. "7K3M-0QZ8-…-…-4TR9W-XH2C0". The caller hands the code to a
// Channel and then forgets it.
func NewChallenge(agent, action, tier string, now time.Time, ttl time.Duration) (*Challenge, string, error) {
	if ttl <= 0 {
		return nil, "", fmt.Errorf("verification challenge: ttl %s is not positive", ttl)
	}
	raw := make([]byte, codeBytes)
	salt := make([]byte, 16)
	// crypto/rand.Read does not fail on supported platforms (it crashes the
	// program instead); the checks are for the signature's sake.
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
	plain := crockford.EncodeToString(raw)
	// The random bytes are no longer needed; zero them. The code itself
	// lives on in Go strings (the caller's, the dialog's text) until the
	// garbage collector reuses their memory: Go cannot zero a string. What
	// keeps another process of this user from reading it there is that
	// aqlguard makes itself non-dumpable at start (no ptrace, no
	// /proc/PID/mem for the same user; see cmd/aqlguard).
	clear(raw)
	c := &Challenge{ID: id, Agent: agent, Action: action, Tier: tier, CreatedAt: now, ExpiresAt: now.Add(ttl),
		salt: salt, hash: digest(salt, plain)}
	return c, groupCode(plain), nil
}

// groupCode splits the 26 digits by codeGroups with hyphens.
func groupCode(s string) string {
	var b strings.Builder
	for i, n := range codeGroups {
		if i > 0 {
			b.WriteByte('-')
		}
		b.WriteString(s[:n])
		s = s[n:]
	}
	return b.String()
}

func digest(salt []byte, normalized string) []byte {
	h := sha256.New()
	h.Write(salt)
	h.Write([]byte(normalized))
	return h.Sum(nil)
}

// NormalizeCode makes typing forgiving without making guessing easier:
// ASCII letters are upper-cased, hyphens and white space are dropped, and
// the letters Crockford's alphabet leaves out for looking like digits read
// as those digits (O as 0, I and L as 1). Anything else is kept as it is
// (and so cannot match). Only ASCII is case-folded: Unicode upper-casing
// would turn look-alikes such as 'ı' (dotless i) or 'ſ' (long s) into code
// digits.
func NormalizeCode(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		switch r {
		case '-', ' ', '\t', '\n', '\r', '\u00a0':
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

// Check verifies code at time now: ErrUsed once it has succeeded before,
// ErrExpired from ExpiresAt on (spec 8.8.2: expired means failed),
// ErrWrongCode when the code does not match. A wrong code does not use
// the challenge up (DESIGN.md: an attempt consumes only the failure
// budget); a success marks it Used.
func (c *Challenge) Check(code string, now time.Time) error {
	if c.Used {
		return ErrUsed
	}
	if !now.Before(c.ExpiresAt) {
		return ErrExpired
	}
	if len(code) > maxCodeInput {
		return ErrWrongCode
	}
	// Constant time: subtle.ConstantTimeCompare looks at every byte of the
	// two digests whatever they hold, so the time taken says nothing about
	// how much of a guess was right. (Comparing salted digests, not codes,
	// already hides that; the constant-time compare keeps it so if the
	// digest is ever dropped.) Do not replace it with bytes.Equal or ==.
	if subtle.ConstantTimeCompare(digest(c.salt, NormalizeCode(code)), c.hash) != 1 {
		return ErrWrongCode
	}
	c.Used = true
	return nil
}

// String shows the public fields only.
func (c Challenge) String() string {
	used := ""
	if c.Used {
		used = ", used"
	}
	return fmt.Sprintf("challenge %s for %q (%s, action %q, expires %s%s)",
		c.ID, c.Agent, c.Tier, c.Action, c.ExpiresAt.UTC().Format(time.RFC3339), used)
}

// GoString keeps %#v from dumping the unexported salt and hash.
func (c Challenge) GoString() string {
	return fmt.Sprintf("verify.Challenge{ID:%q, Agent:%q, Action:%q, Tier:%q, CreatedAt:%q, ExpiresAt:%q, Used:%t}",
		c.ID, c.Agent, c.Action, c.Tier, c.CreatedAt.Format(time.RFC3339Nano), c.ExpiresAt.Format(time.RFC3339Nano), c.Used)
}

// Format makes every verb print String (GoString for %#v): without it,
// verbs such as %d or %x would walk the struct and print salt and hash.
// It is on the value, so a Challenge and a *Challenge print the same.
func (c Challenge) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, c.GoString())
		return
	}
	fmt.Fprint(f, c.String())
}

// challengeJSON is what a Challenge looks like serialised: no salt, no
// hash. (Persisting them is the store's business, through its own type.)
type challengeJSON struct {
	ID        string    `json:"id"`
	Agent     string    `json:"agent"`
	Action    string    `json:"action"`
	Tier      string    `json:"tier"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	Used      bool      `json:"used"`
}

// MarshalJSON implements json.Marshaler with the public fields only.
func (c Challenge) MarshalJSON() ([]byte, error) {
	return json.Marshal(challengeJSON{c.ID, c.Agent, c.Action, c.Tier, c.CreatedAt, c.ExpiresAt, c.Used})
}

// LogValue implements slog.LogValuer, so slog.Any("challenge", c) logs the
// public fields as a group under any handler.
func (c Challenge) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", c.ID), slog.String("agent", c.Agent), slog.String("tier", c.Tier),
		slog.Time("expires_at", c.ExpiresAt), slog.Bool("used", c.Used))
}

// newUUID returns a random (version 4, RFC 4122 variant) UUID in its
// canonical lower-case form.
func newUUID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("drawing a challenge id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // variant 10xx (RFC 4122)
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return string(s[:]), nil
}

// ValidChallengeID reports whether s has the form NewChallenge generates:
// lower-case 8-4-4-4-12 hex, version 4, variant 10xx. Callers check an id
// from the model with it before looking it up, so a malformed id is a
// validation error rather than a lookup.
func ValidChallengeID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
			continue
		case 14:
			if c != '4' {
				return false
			}
			continue
		case 19:
			if c != '8' && c != '9' && c != 'a' && c != 'b' {
				return false
			}
			continue
		}
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
