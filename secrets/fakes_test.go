package secrets

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	cryptorand "crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Realistic fake credentials of the common providers, made at test
// time from a fixed seed in each format's shape (and with its checksum
// or structure where it has one). The repository holds no
// credential-shaped literal: push protection and secret scanners of
// this repository have nothing to find, and none of these was ever
// issued by anyone.
type fakes struct{ r *rand.Rand }

func newFakes(seed uint64) *fakes { return &fakes{rand.New(rand.NewPCG(seed, 0x5ec4e75))} }

const (
	alnum     = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	lowalnum  = "0123456789abcdefghijklmnopqrstuvwxyz"
	upperB32  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	urlsafe   = alnum + "-_"
	hexdigits = "0123456789abcdef"
	digits    = "0123456789"
)

func (f *fakes) chars(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[f.r.IntN(len(alphabet))]
	}
	return string(b)
}

// github returns a GitHub token with prefix (ghp, gho, ghu, ghs, ghr)
// and a valid checksum.
func (f *fakes) github(prefix string) string {
	body := f.chars(alnum, 30)
	return prefix + "_" + body + base62CRC(body)
}

func (f *fakes) npm() string {
	body := f.chars(lowalnum, 30)
	return "npm_" + body + base62CRC(body)
}

func (f *fakes) grafanaSA() string {
	key := "glsa_" + f.chars(alnum, 32)
	n := crc32.ChecksumIEEE([]byte(key))
	return key + "_" + hex.EncodeToString([]byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)})
}

// pypi returns a PyPI token: a macaroon in binary format 2, as PyPI
// issues them (location pypi.org, an identifier, one caveat, a 32-byte
// signature).
func (f *fakes) pypi() string {
	field := func(t byte, data []byte) []byte { return append([]byte{t, byte(len(data))}, data...) }
	var m []byte
	m = append(m, 2)
	m = append(m, field(macLocation, []byte("pypi.org"))...)
	m = append(m, field(macID, []byte(`{"nonce":"`+f.chars(hexdigits, 32)+`","version":1}`))...)
	m = append(m, macEOS)
	m = append(m, field(macID, []byte(`{"permissions":"user","version":1}`))...)
	m = append(m, macEOS)
	m = append(m, macEOS)
	sig := make([]byte, 32)
	for i := range sig {
		sig[i] = byte(f.r.IntN(256))
	}
	m = append(m, field(macSignature, sig)...)
	return "pypi-" + base64.RawURLEncoding.EncodeToString(m)
}

func (f *fakes) jwt() string {
	enc := base64.RawURLEncoding
	h := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	p := enc.EncodeToString([]byte(`{"sub":"` + f.chars(digits, 10) + `","name":"Service Account","iat":1735689600,"exp":1767225600}`))
	mac := hmac.New(sha256.New, []byte(f.chars(alnum, 32)))
	mac.Write([]byte(h + "." + p))
	return h + "." + p + "." + enc.EncodeToString(mac.Sum(nil))
}

func (f *fakes) privateKey(t testing.TB) string {
	k, err := ecdsa.GenerateKey(elliptic.P256(), cryptorand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})))
}

// The provider formats gitleaks' rules describe.
func (f *fakes) aws() string       { return "AKIA" + f.chars(upperB32, 16) }
func (f *fakes) awsSecret() string { return f.chars(alnum+"+/", 40) }
func (f *fakes) gitlab() string    { return "glpat-" + f.chars(urlsafe, 20) }
func (f *fakes) slackBot() string {
	return "xoxb-" + f.chars(digits, 12) + "-" + f.chars(digits, 13) + "-" + f.chars(alnum, 24)
}
func (f *fakes) slackHook() string {
	return "https://hooks.slack.com/services/T" + f.chars(upperB32, 8) + "/B" + f.chars(upperB32, 10) + "/" + f.chars(alnum, 24)
}
func (f *fakes) stripe() string    { return "sk_live_" + f.chars(alnum, 99) }
func (f *fakes) googleAPI() string { return "AIza" + f.chars(urlsafe, 35) }
func (f *fakes) openai() string {
	return "sk-proj-" + f.chars(urlsafe, 74) + "T3BlbkFJ" + f.chars(urlsafe, 74)
}
func (f *fakes) anthropic() string { return "sk-ant-api03-" + f.chars(urlsafe, 93) + "AA" }
func (f *fakes) huggingface() string {
	return "hf_" + f.chars("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 34)
}
func (f *fakes) sendgrid() string { return "SG." + f.chars(urlsafe, 22) + "." + f.chars(urlsafe, 43) }
func (f *fakes) shopify() string  { return "shpat_" + f.chars(hexdigits, 32) }

// generic draws from make until the value is one gitleaks' generic rule
// takes: it ignores a value holding one of its 1,446 stop words
// ("tech", "vpn", …), which about 2% of random 40-character keys do,
// one without a digit (its allowlist ^[a-zA-Z_.-]+$), and one that
// starts with + or /.
func (f *fakes) generic(make func() string) string {
	var stop []string
	for _, r := range Default().compiledRules() {
		if r.id == "generic-api-key" {
			for _, a := range r.allow {
				stop = append(stop, a.stopwords...)
			}
		}
	}
	for {
		v := make()
		low := strings.ToLower(v)
		if v[0] == '+' || v[0] == '/' || !strings.ContainsAny(v, digits) ||
			slices.ContainsFunc(stop, func(w string) bool { return strings.Contains(low, w) }) {
			continue
		}
		return v
	}
}

func (f *fakes) password() string { return f.chars(alnum, 12) + "!" + f.chars(alnum, 6) }
