package secrets

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"sync"
)

// digestKey is this process's key for Digest, drawn once from
// crypto/rand and never written anywhere: a digest cannot be computed
// from a guessed secret outside the process, and digests of one
// process do not compare with another's.
var digestKey = sync.OnceValue(func() []byte {
	k := make([]byte, 32)
	rand.Read(k) // never fails (crypto/rand, Go 1.24)
	return k
})

// Digest returns the keyed digest Finding.Digest uses: "hmac:" and the
// first 6 bytes of HMAC-SHA256(per-process key, secret) in hex. It
// names a secret in logs, audit records and notices without carrying
// it; 48 bits tell a session's secrets apart.
func Digest(secret string) string {
	m := hmac.New(sha256.New, digestKey())
	m.Write([]byte(secret))
	var sum [sha256.Size]byte
	return "hmac:" + hex.EncodeToString(m.Sum(sum[:0])[:6])
}

// Redact returns text with each finding's secret replaced by
// "[secret redacted: <rule> <digest>]". Findings must come from a Scan
// of this text; overlapping ones are redacted as one, named by the
// first. Findings outside the text are ignored.
func Redact(text string, fs []Finding) string {
	if len(fs) == 0 {
		return text
	}
	fs = append([]Finding(nil), fs...)
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Start < fs[j].Start })
	var b strings.Builder
	at := 0
	for i := 0; i < len(fs); i++ {
		f := fs[i]
		if f.Start < 0 || f.Start >= f.End || f.End > len(text) {
			continue
		}
		if f.Start < at {
			at = max(at, f.End) // overlaps the last one: under its placeholder
			continue
		}
		b.WriteString(text[at:f.Start])
		d := f.Digest
		if d == "" {
			d = Digest(text[f.Start:f.End])
		}
		b.WriteString("[secret redacted: " + f.Rule + " " + d + "]")
		at = f.End
	}
	b.WriteString(text[at:])
	return b.String()
}
