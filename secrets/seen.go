package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
)

// MinSeenLen is the shortest secret Seen remembers, in bytes. Shorter
// ones (a 7-letter password in a database URL) would be found by chance
// in ordinary arguments, and their encodings are too short to tell
// apart from other data.
const MinSeenLen = 10

// MaxSeen is how many secrets one Seen remembers. Past it Add drops
// what it is given and counts it (Dropped), so that the caller can say
// so instead of trusting a memory that stopped growing.
const MaxSeen = 1024

// Seen is the secrets one session has seen, to recognise them going
// out, plain or encoded. Zero value ready; safe for concurrent use.
//
// It holds each secret in memory as long as it lives (Clear drops
// them) and never gives one out: Carried names the rule, the digest
// and the encoding. What it recognises, in any part of the text:
//
//   - the secret as it is ("plain");
//   - its base64, standard ("base64") or URL-safe ("base64url"), with or
//     without padding, at any of the three alignments inside a longer
//     base64 text (what encoding the secret with a prefix, a suffix or a
//     trailing newline produces);
//   - its hex, in either case or mixed ("hex");
//   - any of those percent-encoded, wholly or partly, in either case,
//     once or twice, or form-encoded (+ for a space) ("url",
//     "url+base64", "url+hex").
//
// What it cannot see: a secret split across arguments or fields, or cut
// short; encodings other than those above or stacked in another order
// (hex of base64, base64 of a URL-encoded secret, base32, a JSON or
// HTML escape of its characters, quoted-printable); base64 broken into
// lines; the secret in another case; compression or encryption; any
// transformation the model makes of it (reversing, spelling it out).
type Seen struct {
	mu sync.RWMutex
	// st holds the secrets behind a pointer, so that printing a Seen
	// (%v, %+v, %#v, of it or of a struct that holds it) shows an
	// address, never them; String says how many there are.
	st *seenState
}

type seenState struct {
	known   map[string]int // secret -> index into entries
	entries []seenEntry
	needles []needle
	// exact and folded find needles by their first 8 bytes, as they are
	// (plain, base64) or in lower case (hex): a bit filter first, then
	// a map.
	exact, folded needleIndex
	spaced        bool // a secret has a space
	dropped       int
}

type seenEntry struct{ rule, digest string }

type needle struct {
	text  string
	entry int
	enc   string
	fold  bool // matched without regard to ASCII case
}

// Carried says that a text carries a secret a session has seen, and
// how, without the secret.
type Carried struct {
	Rule, Digest, Encoding string // Encoding: "plain", "base64", "hex", "url", ... (no secret)
	// From says where and when the secret was read, when not by this
	// session (a PrintSet's: another process's read, in words); "" for
	// Seen's.
	From string
}

// needleIndex finds needles by their first 8 bytes.
type needleIndex struct {
	filter []uint64 // 1<<filterBits bits
	byKey  map[uint64][]int
}

const filterBits = 16

func filterSlot(key uint64) uint64 { return (key * 0x9e3779b97f4a7c15) >> (64 - filterBits) }

func (x *needleIndex) add(key uint64, i int) {
	if x.filter == nil {
		x.filter = make([]uint64, 1<<filterBits/64)
		x.byKey = map[uint64][]int{}
	}
	h := filterSlot(key)
	x.filter[h/64] |= 1 << (h % 64)
	x.byKey[key] = append(x.byKey[key], i)
}

func (x *needleIndex) has(key uint64) bool {
	h := filterSlot(key)
	return x.filter[h/64]&(1<<(h%64)) != 0
}

func key8(s string) uint64 {
	var k uint64
	for i := 7; i >= 0; i-- {
		k = k<<8 | uint64(s[i])
	}
	return k
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// Add remembers text[f.Start:f.End], the secret of a finding of a Scan
// of text, and its encodings. Secrets shorter than MinSeenLen, and
// findings outside the text, are ignored; past MaxSeen secrets nothing
// more is remembered and Dropped counts what was not.
func (s *Seen) Add(text string, f Finding) {
	if f.Start < 0 || f.End > len(text) || f.End-f.Start < MinSeenLen {
		return
	}
	// A copy: a substring would keep the whole result alive.
	secret := strings.Clone(text[f.Start:f.End])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		s.st = &seenState{known: map[string]int{}}
	}
	s.st.add(secret, f.Rule)
}

func (s *seenState) add(secret, rule string) {
	if _, ok := s.known[secret]; ok {
		return
	}
	if len(s.entries) >= MaxSeen {
		s.dropped++
		return
	}
	e := len(s.entries)
	s.known[secret] = e
	s.entries = append(s.entries, seenEntry{rule: rule, digest: Digest(secret)})
	s.spaced = s.spaced || strings.IndexByte(secret, ' ') >= 0
	for _, n := range encodings(secret) {
		n.entry = e
		i := len(s.needles)
		s.needles = append(s.needles, n)
		if n.fold {
			s.folded.add(key8(n.text), i)
		} else {
			s.exact.add(key8(n.text), i)
		}
	}
}

// encodings returns the needles of a secret (without their entry).
func encodings(secret string) []needle {
	out := []needle{{text: secret, enc: "plain"}}
	out = append(out, needle{text: hex.EncodeToString([]byte(secret)), enc: "hex", fold: true})
	for _, e := range []struct {
		enc *base64.Encoding
		tag string
	}{{base64.StdEncoding, "base64"}, {base64.URLEncoding, "base64url"}} {
		for a := 0; a < 3; a++ {
			m := base64Middle(e.enc, secret, a)
			dup := false
			for _, n := range out {
				if n.text == m {
					dup = true
				}
			}
			if len(m) >= 8 && !dup {
				out = append(out, needle{text: m, enc: e.tag})
			}
		}
	}
	return out
}

// base64Middle returns the characters of the base64 of any text that
// holds secret at an offset of a (mod 3) bytes which the secret alone
// decides: those whose 6 bits all come from it.
func base64Middle(enc *base64.Encoding, secret string, a int) string {
	buf := make([]byte, a+len(secret)+2)
	copy(buf[a:], secret)
	full := enc.EncodeToString(buf)
	first := (8*a + 5) / 6            // the first character starting at or after bit 8a
	last := (8*(a+len(secret)))/6 - 1 // the last character ending at or before bit 8(a+n)
	if last < first {
		return ""
	}
	return full[first : last+1]
}

// Carried reports whether text carries a secret the session has seen,
// in one of the forms Seen recognises (see Seen).
func (s *Seen) Carried(text string) (Carried, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.st == nil || len(s.st.entries) == 0 || len(text) < 8 {
		return Carried{}, false
	}
	return s.st.carried(text)
}

func (s *seenState) carried(text string) (Carried, bool) { return views(text, s.spaced, s.find) }

// views looks with find in text as it is and in the views of it an
// encoding makes: percent-decoded, once or twice; and as a form encodes,
// with + for a space, when spaced (a secret has one: a private key
// block). find's via names the view ("" or "url").
func views(text string, spaced bool, find func(text, via string) (Carried, bool)) (Carried, bool) {
	if c, ok := find(text, ""); ok {
		return c, true
	}
	for _, plus := range []bool{false, true} {
		if plus && (!spaced || strings.IndexByte(text, '+') < 0) {
			continue
		}
		v := text
		for round := 0; round < 2 && (strings.IndexByte(v, '%') >= 0 || plus); round++ {
			dec, changed := percentDecode(v, plus && round == 0)
			if !changed {
				break
			}
			v = dec
			if c, ok := find(v, "url"); ok {
				return c, true
			}
		}
	}
	return Carried{}, false
}

// find looks for the needles in one view of the outgoing text.
func (s *seenState) find(text, via string) (Carried, bool) {
	var k, kf uint64
	for i := 0; i < len(text); i++ {
		c := text[i]
		k = k>>8 | uint64(c)<<56
		kf = kf>>8 | uint64(lowerASCII(c))<<56
		if i < 7 {
			continue
		}
		start := i - 7
		if s.exact.filter != nil && s.exact.has(k) {
			for _, ni := range s.exact.byKey[k] {
				n := &s.needles[ni]
				if strings.HasPrefix(text[start:], n.text) {
					return s.report(n, via), true
				}
			}
		}
		if s.folded.filter != nil && s.folded.has(kf) {
			for _, ni := range s.folded.byKey[kf] {
				n := &s.needles[ni]
				if hasPrefixFold(text[start:], n.text) {
					return s.report(n, via), true
				}
			}
		}
	}
	return Carried{}, false
}

func (s *seenState) report(n *needle, via string) Carried {
	e := s.entries[n.entry]
	return Carried{Rule: e.rule, Digest: e.digest, Encoding: viaEncoding(via, n.enc)}
}

// hasPrefixFold is strings.HasPrefix without regard to ASCII case;
// prefix is lower case.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if lowerASCII(s[i]) != prefix[i] {
			return false
		}
	}
	return true
}

// percentDecode decodes every %XX (either case) of s, and + as a space
// when plus; anything else, a lone % included, stays as it is.
func percentDecode(s string, plus bool) (string, bool) {
	var b strings.Builder
	changed := false
	for i := 0; i < len(s); i++ {
		if plus && s[i] == '+' {
			if !changed {
				b.Grow(len(s))
				b.WriteString(s[:i])
				changed = true
			}
			b.WriteByte(' ')
			continue
		}
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			if !changed {
				b.Grow(len(s))
				b.WriteString(s[:i])
				changed = true
			}
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		if changed {
			b.WriteByte(s[i])
		}
	}
	if !changed {
		return s, false
	}
	return b.String(), true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// Len returns how many secrets are remembered.
func (s *Seen) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.st == nil {
		return 0
	}
	return len(s.st.entries)
}

// Dropped returns how many secrets Add was given past MaxSeen and did
// not remember.
func (s *Seen) Dropped() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.st == nil {
		return 0
	}
	return s.st.dropped
}

// Clear forgets every secret (the human cleared the session's taint).
func (s *Seen) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st = nil
}

// String says how many secrets s holds, never which.
func (s *Seen) String() string { return fmt.Sprintf("secrets.Seen{%d secrets}", s.Len()) }

// GoString is String, for %#v.
func (s *Seen) GoString() string { return s.String() }
