package secrets

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
)

// A client that starts one aqlguard per server reads a secret through
// one process and sends it through another. The reading process's Seen
// cannot be handed over (it holds the secrets); what is handed over are
// keyed fingerprints of the forms Seen recognises, under a key the
// client's processes share (flows.Board keeps it beside their board,
// mode 0600), and a PrintSet finds them in an outgoing text as Seen
// finds the secrets themselves.
//
// A fingerprint is two keyed values of one form of the secret (the
// secret, its hex, the middles of its base64 and base64url; see
// encodings):
//
//   - Tag, 32 bits of SipHash-2-4 of the form's first 8 bytes: what lets
//     a PrintSet test every position of a text cheaply (a 64-bit keyed
//     PRF per byte) and rule out all but one in 2^32 of them;
//   - MAC, 128 bits of HMAC-SHA256 of the whole form: what a candidate
//     window of exactly the form's length must match, so that no prefix,
//     near miss or chance window is taken for the secret.
//
// Both are keyed, so that the file they are written to tells nothing of
// the secret to whoever has it without the key: no guess of a secret,
// or of its first 8 bytes, can be tested against it. Whoever can read
// the key can test guesses, as they could read what the secret was read
// from.

// PrintKeyLen is the length of a key NewPrintKey takes.
const PrintKeyLen = 32

// PrintKey is the key of a set of fingerprints: one per client's board.
type PrintKey struct {
	mac    []byte // HMAC-SHA256 key of MACs
	k0, k1 uint64 // SipHash key of Tags
	id     uint32 // names the key on what it printed (KeyID)
}

// NewPrintKey derives the keys of fingerprints from key (PrintKeyLen
// random bytes): one for MACs and one for Tags, apart, so that neither
// tells of the other.
func NewPrintKey(key []byte) (*PrintKey, error) {
	if len(key) != PrintKeyLen {
		return nil, errors.New("secrets: a fingerprint key is 32 bytes")
	}
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte("aqlguard fingerprint " + label))
		return m.Sum(nil)
	}
	tag := derive("tag")
	return &PrintKey{
		mac: derive("mac"),
		k0:  binary.LittleEndian.Uint64(tag[0:8]),
		k1:  binary.LittleEndian.Uint64(tag[8:16]),
		id:  binary.LittleEndian.Uint32(derive("id")),
	}, nil
}

// KeyID names the key (32 bits of a keyed value of a constant): a
// reader under another key knows a fingerprint is not one it can test.
func (k *PrintKey) KeyID() uint32 { return k.id }

// Print is the fingerprint of one form of a secret.
type Print struct {
	// Encoding is the form's: "plain", "hex", "base64" or "base64url".
	Encoding string
	// Len is the form's length in bytes.
	Len int
	// Tag is 32 bits of the keyed PRF of the form's first 8 bytes (as
	// they are; in lower case for "hex").
	Tag uint32
	// MAC is 128 bits of the HMAC of the form.
	MAC [16]byte
}

// MaxPrintLen bounds a Print's Len: the hex of the longest secret a
// result's scan can find (the scan budget is 1 MiB) fits.
const MaxPrintLen = 4 << 20

// printEncodings are the Encodings a Print may have.
var printEncodings = []string{"plain", "hex", "base64", "base64url"}

// ValidEncoding reports whether enc is a Print's Encoding.
func ValidEncoding(enc string) bool {
	return slices.Contains(printEncodings, enc)
}

// Prints returns the fingerprints of text[f.Start:f.End], the secret of
// a finding of a Scan of text, in each form Seen recognises; nil for
// what Seen.Add would not remember (shorter than MinSeenLen, outside
// the text). The first is the plain secret's: its MAC names the secret
// under k.
func (k *PrintKey) Prints(text string, f Finding) []Print {
	if f.Start < 0 || f.End > len(text) || f.End-f.Start < MinSeenLen {
		return nil
	}
	var out []Print
	for _, n := range encodings(text[f.Start:f.End]) {
		out = append(out, Print{Encoding: n.enc, Len: len(n.text), Tag: k.tag(key8(n.text)), MAC: k.sum(n.text, false)})
	}
	return out
}

// tag is the Tag of a form whose first 8 bytes are w (key8).
func (k *PrintKey) tag(w uint64) uint32 { return uint32(sipHash8(k.k0, k.k1, w) >> 32) }

// sum is the MAC of s (in lower case when fold).
func (k *PrintKey) sum(s string, fold bool) [16]byte {
	m := hmac.New(sha256.New, k.mac)
	if fold {
		b := []byte(s)
		for i := range b {
			b[i] = lowerASCII(b[i])
		}
		m.Write(b)
	} else {
		m.Write([]byte(s))
	}
	var sum [sha256.Size]byte
	var out [16]byte
	copy(out[:], m.Sum(sum[:0]))
	return out
}

// sipHash8 is SipHash-2-4 (Aumasson and Bernstein) of one 8-byte
// message, m read little-endian: a PRF fast enough to run at every
// byte of an outgoing text.
func sipHash8(k0, k1, m uint64) uint64 {
	v0 := k0 ^ 0x736f6d6570736575
	v1 := k1 ^ 0x646f72616e646f6d
	v2 := k0 ^ 0x6c7967656e657261
	v3 := k1 ^ 0x7465646279746573
	v3 ^= m
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0 ^= m
	const last = uint64(8) << 56 // the length, no bytes left
	v3 ^= last
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0 ^= last
	v2 ^= 0xff
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	return v0 ^ v1 ^ v2 ^ v3
}

func sipRound(v0, v1, v2, v3 uint64) (uint64, uint64, uint64, uint64) {
	v0 += v1
	v1 = bits.RotateLeft64(v1, 13) ^ v0
	v0 = bits.RotateLeft64(v0, 32)
	v2 += v3
	v3 = bits.RotateLeft64(v3, 16) ^ v2
	v0 += v3
	v3 = bits.RotateLeft64(v3, 21) ^ v0
	v2 += v1
	v1 = bits.RotateLeft64(v1, 17) ^ v2
	v2 = bits.RotateLeft64(v2, 32)
	return v0, v1, v2, v3
}

// PrintSet is the fingerprints of secrets another process has seen, to
// recognise them going out as Seen does its own: the same forms, the
// same views of the text (percent-decoded, once or twice, or as a form
// encodes). Safe for concurrent use; build it with NewPrintSet.
type PrintSet struct {
	key *PrintKey

	mu      sync.RWMutex
	entries []printEntry
	prints  []Print
	owner   []int // prints[i]'s entry
	// exact and folded find prints by Tag (folded: "hex", whose Tag is
	// of its first 8 bytes in lower case).
	exact, folded tagIndex
	known         map[[16]byte]bool // the plain forms' MACs
}

// tagIndex finds prints by Tag: a bit filter on its low 16 bits first
// (a Tag is a PRF's: its bits are even), then a map.
type tagIndex struct {
	filter [1 << 16 / 64]uint64
	byTag  map[uint32][]int
}

func (x *tagIndex) add(tag uint32, i int) {
	if x.byTag == nil {
		x.byTag = map[uint32][]int{}
	}
	x.filter[tag&0xffff/64] |= 1 << (tag % 64)
	x.byTag[tag] = append(x.byTag[tag], i)
}

// may reports whether tag may have prints (the filter: small enough to
// inline, as it runs at every byte).
func (x *tagIndex) may(tag uint32) bool { return x.filter[tag&0xffff/64]&(1<<(tag%64)) != 0 }

type printEntry struct{ rule, digest, from string }

// NewPrintSet returns an empty set of fingerprints made under k.
func NewPrintSet(k *PrintKey) *PrintSet {
	return &PrintSet{key: k, known: map[[16]byte]bool{}}
}

// Add remembers the fingerprints of one secret (Prints, the plain form
// first) and what to say of it: its rule, the digest its reader named
// it by, and where and when it was read (Carried's From). A secret
// already held (the same plain MAC) is not added again.
func (p *PrintSet) Add(rule, digest, from string, prints []Print) {
	if len(prints) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if prints[0].Encoding == "plain" {
		if p.known[prints[0].MAC] {
			return
		}
		p.known[prints[0].MAC] = true
	}
	e := len(p.entries)
	p.entries = append(p.entries, printEntry{rule, digest, from})
	for _, pr := range prints {
		i := len(p.prints)
		p.prints = append(p.prints, pr)
		p.owner = append(p.owner, e)
		if pr.Encoding == "hex" {
			p.folded.add(pr.Tag, i)
		} else {
			p.exact.add(pr.Tag, i)
		}
	}
}

// Len returns how many secrets the set holds.
func (p *PrintSet) Len() int {
	if p == nil {
		return 0
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.entries)
}

// Carried reports whether text carries a secret of the set, in one of
// the forms Seen recognises; Carried.From says where it was read.
func (p *PrintSet) Carried(text string) (Carried, bool) {
	if p == nil {
		return Carried{}, false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if len(p.prints) == 0 || len(text) < 8 {
		return Carried{}, false
	}
	// Whether a secret holds a space is not printed: the form-encoded
	// view is read whenever the text has a '+'.
	return views(text, true, p.find)
}

// find looks for the prints in one view of the outgoing text: a keyed
// Tag at each position, and the MAC of the window of a print's length
// where a Tag matches.
func (p *PrintSet) find(text, via string) (Carried, bool) {
	var w, wf uint64
	for i := 0; i < len(text); i++ {
		c := text[i]
		w = w>>8 | uint64(c)<<56
		wf = wf>>8 | uint64(lowerASCII(c))<<56
		if i < 7 {
			continue
		}
		start := i - 7
		var t uint32
		if p.exact.byTag != nil {
			t = p.key.tag(w)
			if p.exact.may(t) {
				if c, ok := p.match(p.exact.byTag[t], text[start:], false, via); ok {
					return c, true
				}
			}
		}
		if p.folded.byTag != nil {
			if wf != w || p.exact.byTag == nil {
				t = p.key.tag(wf)
			}
			if p.folded.may(t) {
				if c, ok := p.match(p.folded.byTag[t], text[start:], true, via); ok {
					return c, true
				}
			}
		}
	}
	return Carried{}, false
}

// match reports whether rest starts with one of the prints cands.
func (p *PrintSet) match(cands []int, rest string, fold bool, via string) (Carried, bool) {
	for _, i := range cands {
		pr := &p.prints[i]
		if pr.Len > len(rest) {
			continue
		}
		if sum := p.key.sum(rest[:pr.Len], fold); hmac.Equal(sum[:], pr.MAC[:]) {
			e := p.entries[p.owner[i]]
			return Carried{Rule: e.rule, Digest: e.digest, Encoding: viaEncoding(via, pr.Encoding), From: e.from}, true
		}
	}
	return Carried{}, false
}

// viaEncoding names the form a secret was found in: enc seen through
// the view via ("" or "url").
func viaEncoding(via, enc string) string {
	switch {
	case via == "":
		return enc
	case enc == "plain":
		return via
	}
	return via + "+" + enc
}

// String says how many secrets p holds, never what of them.
func (p *PrintSet) String() string {
	return fmt.Sprintf("secrets.PrintSet{%d secrets}", p.Len())
}

// GoString is String, for %#v.
func (p *PrintSet) GoString() string { return p.String() }
