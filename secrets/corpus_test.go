package secrets

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corpusTexts returns the ordinary texts of testdata/ordinary (see its
// README for where each comes from) and ordinaryValues.
func corpusTexts(t testing.TB) []string {
	t.Helper()
	var out []string
	files, err := filepath.Glob("testdata/ordinary/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if filepath.Base(f) == "README.md" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(data))
	}
	return append(out, ordinaryValues()...)
}

// Field names of API responses whose values are not credentials,
// though their names hold "key", "token", "secret", "auth" or "access".
var ordinaryFields = []string{
	"idempotency_key", "cache_key", "key_id", "kid", "ssh_key_fingerprint", "public_key", "api_version", "secret_name",
	"token_type", "access_level", "auth_method", "object_key", "s3_key", "partition_key", "sort_key", "primary_key",
	"api_url", "token_url", "key_hash", "password_changed_at", "secret_version", "api_key_id", "access_key_id",
	"token_hash", "authorization_id", "oauth_state", "auth_code_challenge", "keyFingerprint", "tokenId", "secretArn",
	"apiKeyName", "accessTokenExpiresAt", "signing_key_id", "credential_id", "author_id", "access_count",
	"password_reset_sent_at", "next_page_token", "continuation_token", "rowKey", "author",
	// and names without those words
	"etag", "request_id", "session_id", "commit_sha", "checksum", "nonce", "node_id", "digest", "integrity",
}

// ordinaryValues are hashes, ids and encodings of ordinary data, alone,
// in lists and as the values of ordinaryFields in JSON, YAML and env
// forms: none is a credential.
func ordinaryValues() []string {
	r := rand.New(rand.NewPCG(7, 7))
	var vals []string
	for i := 0; i < 4; i++ {
		b := make([]byte, 64)
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		s1, s256, s512 := sha1.Sum(b), sha256.Sum256(b), sha512.Sum512(b)
		u := b[:16]
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		vals = append(vals,
			hex.EncodeToString(s1[:]),
			hex.EncodeToString(s256[:]),
			hex.EncodeToString(s512[:]),
			strings.ToUpper(hex.EncodeToString(s256[:])),
			fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]),
			"sha256:"+hex.EncodeToString(s256[:]),
			"sha512-"+base64.StdEncoding.EncodeToString(s512[:]),
			base64.StdEncoding.EncodeToString(s256[:]),
			"SHA256:"+base64.RawStdEncoding.EncodeToString(s256[:]),
		)
	}
	prose := []string{
		"The quick brown fox jumps over the lazy dog",
		`{"name":"widgets","version":"2.3.1","private":false}`,
		"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor",
		"user=alice&role=viewer&team=platform",
	}
	for _, p := range prose {
		vals = append(vals, base64.StdEncoding.EncodeToString([]byte(p)), base64.URLEncoding.EncodeToString([]byte(p)), hex.EncodeToString([]byte(p)))
	}
	vals = append(vals, "2025-03-14T09:21:37Z", "v2.3.1", "01HQ3Z8K6M2N4P5R7T9V1X3Z5B", "Bearer", "MDQ6VXNlcjU4MzIzMQ==",
		"arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/api-key-AbCdEf", "https://api.example.com/v1/keys/42")

	var out []string
	out = append(out, strings.Join(vals, "\n"), strings.Join(vals, " "))
	for _, f := range ordinaryFields {
		var j, y, e strings.Builder
		j.WriteString("[")
		for i, v := range vals {
			if i > 0 {
				j.WriteString(",")
			}
			fmt.Fprintf(&j, `{"%s": "%s"}`, f, v)
			fmt.Fprintf(&y, "%s: %s\n", f, v)
			fmt.Fprintf(&e, "%s=%s\n", strings.ToUpper(f), v)
		}
		j.WriteString("]")
		out = append(out, j.String(), y.String(), e.String())
	}
	return out
}

// TestOrdinaryTexts: ordinary texts hold no secret.
func TestOrdinaryTexts(t *testing.T) {
	s := Default()
	n := 0
	for _, text := range corpusTexts(t) {
		n += len(text)
		for _, f := range s.Scan("", text) {
			lo, hi := max(0, f.Start-60), min(len(text), f.End+20)
			t.Errorf("%s in an ordinary text: %q", f.Rule, text[lo:hi])
		}
	}
	t.Logf("%d bytes of ordinary text", n)
}
