package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"hash/crc32"
	"strings"
)

// checker is a format's own check of a secret the rule's regex found:
// a checksum or a structure that must parse whole. A secret that fails
// it is not a credential of that format and is not reported.
type checker func(secret string) bool

// checkers maps a rule id to its format's check. Which formats have
// one, and why the others have none, is in doc.go ("Checks").
var checkers = map[string]checker{
	"github-pat":                    checkBase62CRC,
	"github-oauth":                  checkBase62CRC,
	"github-app-token":              checkBase62CRC,
	"github-refresh-token":          checkBase62CRC,
	"npm-access-token":              checkBase62CRC,
	"grafana-service-account-token": checkGrafanaSA,
	"pypi-upload-token":             checkPyPIMacaroon,
	"jwt":                           checkJWT,
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// base62CRC returns the six-character checksum GitHub and npm append to
// a token's 30 random characters: the CRC-32 (IEEE) of those characters
// in base 62 (digits, upper case, lower case), padded with zeros.
func base62CRC(body string) string {
	n := crc32.ChecksumIEEE([]byte(body))
	var b [6]byte
	for i := 5; i >= 0; i-- {
		b[i] = base62[n%62]
		n /= 62
	}
	return string(b[:])
}

// checkBase62CRC checks GitHub's ghp_/gho_/ghu_/ghs_/ghr_ tokens and
// npm's npm_ tokens: a four-character prefix, 30 random base-62
// characters and their checksum (github.blog 2021-04-05 "Behind
// GitHub's new authentication token formats"; 2021-09-23 "npm's new
// access token format").
func checkBase62CRC(secret string) bool {
	if len(secret) != 40 {
		return false
	}
	return base62CRC(secret[4:34]) == secret[34:]
}

// checkGrafanaSA checks a Grafana service account token,
// glsa_<32 characters>_<8 hex>: the hex digits are the CRC-32 (IEEE)
// of everything before the last underscore, little-endian (grafana's
// pkg/components/satokengen).
func checkGrafanaSA(secret string) bool {
	i := strings.LastIndexByte(secret, '_')
	if i < 0 || len(secret)-i-1 != 8 {
		return false
	}
	n := crc32.ChecksumIEEE([]byte(secret[:i]))
	le := []byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)}
	return hex.EncodeToString(le) == secret[i+1:]
}

// checkPyPIMacaroon checks a PyPI API token: "pypi-" and a macaroon in
// libmacaroons' binary format version 2, base64url with or without
// padding. The macaroon's signature cannot be checked without PyPI's
// key, but its structure must parse to the end: version 2, the
// location and identifier fields, the caveats, and a 32-byte signature
// as the last field. Random characters after the fixed prefix the rule
// requires (pypi-AgEIcHlwaS5vcmc, the encoding of version 2 and the
// location "pypi.org") do not.
func checkPyPIMacaroon(secret string) bool {
	body, ok := strings.CutPrefix(secret, "pypi-")
	if !ok {
		return false
	}
	data, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(body, "="))
	if err != nil {
		return false
	}
	return parseMacaroonV2(data)
}

// Field types of the binary macaroon format version 2.
const (
	macEOS       = 0
	macLocation  = 1
	macID        = 2
	macVID       = 4
	macSignature = 6
)

func parseMacaroonV2(d []byte) bool {
	if len(d) == 0 || d[0] != 2 {
		return false
	}
	d = d[1:]
	// field reads one field; typ is macEOS at the end of a section.
	field := func() (typ uint64, ok bool) {
		t, n := uvarint(d)
		if n <= 0 {
			return 0, false
		}
		d = d[n:]
		if t == macEOS {
			return macEOS, true
		}
		l, n := uvarint(d)
		if n <= 0 || l > uint64(len(d)-n) {
			return 0, false
		}
		d = d[n+int(l):]
		return t, true
	}
	// section reads location?, identifier, vid? (caveats only), EOS.
	section := func(caveat bool) bool {
		seenID := false
		last := uint64(0)
		for {
			t, ok := field()
			if !ok {
				return false
			}
			if t == macEOS {
				return seenID
			}
			switch {
			case t <= last:
				return false // fields come in order, once each
			case t == macLocation:
			case t == macID:
				seenID = true
			case t == macVID && caveat:
			default:
				return false
			}
			last = t
		}
	}
	if !section(false) {
		return false
	}
	for {
		if len(d) == 0 {
			return false
		}
		if d[0] == macEOS {
			d = d[1:]
			break
		}
		if !section(true) {
			return false
		}
	}
	t, n := uvarint(d)
	if n <= 0 || t != macSignature {
		return false
	}
	d = d[n:]
	l, n := uvarint(d)
	return n > 0 && l == 32 && len(d)-n == 32
}

// uvarint is binary.Uvarint, limited to what a field header needs.
func uvarint(d []byte) (uint64, int) {
	var x uint64
	var s uint
	for i, b := range d {
		if i == 4 {
			return 0, -1
		}
		if b < 0x80 {
			return x | uint64(b)<<s, i + 1
		}
		x |= uint64(b&0x7f) << s
		s += 7
	}
	return 0, 0
}

// checkJWT checks a JSON Web Token in compact form: its header must
// decode to a JSON object that names an algorithm ("alg", RFC 7515
// 4.1.1) and its payload to a JSON object. The gitleaks rule asks only
// for two parts that begin with "ey" (what base64 makes of `{"`).
func checkJWT(secret string) bool {
	parts := strings.SplitN(secret, ".", 3)
	if len(parts) < 2 {
		return false
	}
	header, ok := decodeJWTPart(parts[0])
	if !ok {
		return false
	}
	var h map[string]json.RawMessage
	if json.Unmarshal(header, &h) != nil {
		return false
	}
	if _, ok := h["alg"]; !ok {
		return false
	}
	payload, ok := decodeJWTPart(parts[1])
	if !ok {
		return false
	}
	var p map[string]json.RawMessage
	return json.Unmarshal(payload, &p) == nil
}

// decodeJWTPart decodes base64url without padding, as JWTs are written;
// the gitleaks rule also takes JSON-escaped slashes ("\/") and the
// standard alphabet, which some encoders write.
func decodeJWTPart(s string) ([]byte, bool) {
	s = strings.ReplaceAll(s, `\/`, "/")
	s = strings.TrimRight(s, "=")
	s = strings.NewReplacer("+", "-", "/", "_").Replace(s)
	d, err := base64.RawURLEncoding.DecodeString(s)
	return d, err == nil
}
