package secrets

import (
	"encoding/base64"
	"regexp/syntax"
	"testing"
)

func mustParse(t *testing.T, expr string) *syntax.Regexp {
	t.Helper()
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	return re
}

// The published vectors pin the formats: an expired GitHub token's
// body and checksum (therootcompany/base62-token.js, issue 2), and
// the token of Grafana's own satokengen test.
func TestChecksumVectors(t *testing.T) {
	if got := base62CRC("zQWBuTSOoRi4A9spHcVY5ncnsDkxkJ"); got != "0mLq17" {
		t.Errorf("base62CRC = %q, want 0mLq17", got)
	}
	if got := base62CRC("adE7dp8rHP6gUTuPwxLTZjZdtya3sV"); got != "0UQzQM" {
		t.Errorf("base62CRC = %q, want 0UQzQM", got)
	}
	if !checkBase62CRC("ghp_" + "zQWBuTSOoRi4A9spHcVY5ncnsDkxkJ" + "0mLq17") {
		t.Error("the published token does not check")
	}
	if checkBase62CRC("ghp_" + "zQWBuTSOoRi4A9spHcVY5ncnsDkxkj" + "0mLq17") {
		t.Error("a changed token checks")
	}
	if !checkGrafanaSA("glsa_iNValIdinValiDinvalidinvalidinva_5b582697") {
		t.Error("grafana's test token does not check")
	}
	if checkGrafanaSA("glsa_iNValIdinValiDinvalidinvalidinva_5b582698") || checkGrafanaSA("glsa_x") {
		t.Error("a wrong grafana token checks")
	}
}

func TestMacaroon(t *testing.T) {
	f := newFakes(51)
	tok := f.pypi()
	if !checkPyPIMacaroon(tok) {
		t.Fatal("a well-formed macaroon does not check")
	}
	body := tok[len("pypi-"):]
	data, _ := base64.RawURLEncoding.DecodeString(body)
	padded := "pypi-" + base64.URLEncoding.EncodeToString(data)
	if !checkPyPIMacaroon(padded) {
		t.Error("with padding: does not check")
	}
	bad := map[string][]byte{
		"version 1":         append([]byte{1}, data[1:]...),
		"no signature":      data[:len(data)-34],
		"short signature":   data[:len(data)-1],
		"trailing data":     append(append([]byte{}, data...), 0),
		"no identifier":     append([]byte{2, macLocation, 1, 'x', macEOS, macEOS, macSignature, 32}, make([]byte, 32)...),
		"unknown field":     append([]byte{2, 3, 1, 'x', macEOS, macEOS, macSignature, 32}, make([]byte, 32)...),
		"vid in the header": append([]byte{2, macID, 1, 'x', macVID, 1, 'y', macEOS, macEOS, macSignature, 32}, make([]byte, 32)...),
		"empty":             {},
	}
	for name, d := range bad {
		if checkPyPIMacaroon("pypi-" + base64.RawURLEncoding.EncodeToString(d)) {
			t.Errorf("%s: checks", name)
		}
	}
	if checkPyPIMacaroon("pypi-!!!") || checkPyPIMacaroon("npm_x") {
		t.Error("not base64: checks")
	}
}

func TestJWTCheck(t *testing.T) {
	f := newFakes(52)
	if !checkJWT(f.jwt()) {
		t.Error("a JWT does not check")
	}
	enc := base64.RawURLEncoding.EncodeToString
	cases := map[string]bool{
		enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(`{"sub":"1"}`)) + ".":         true,
		enc([]byte(`{"typ":"JWT"}`)) + "." + enc([]byte(`{"sub":"1"}`)) + ".sig":       false, // no alg
		enc([]byte(`{"alg":"HS256"}`)) + "." + enc([]byte(`[1,2]`)) + ".sig":           false, // payload not an object
		enc([]byte(`{"alg":"HS256"`)) + "." + enc([]byte(`{"sub":"1"}`)) + ".sig":      false,
		enc([]byte(`{"alg":"HS256"}`)):                                                 false,
		`eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0\/x.sig`:                                  false, // \/ decodes, payload then is not JSON
		enc([]byte(`{"alg":"HS256"}`)) + "==." + enc([]byte(`{"sub":"1"}`)) + "==.sig": true,
	}
	for tok, want := range cases {
		if got := checkJWT(tok); got != want {
			t.Errorf("checkJWT(%q) = %v, want %v", tok, got, want)
		}
	}
}
