package secrets

import (
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// A family of credentials: how to make one, the rule that finds it,
// whether its format has a check, and where in the text the secret is.
type family struct {
	name    string
	make    func(f *fakes, t testing.TB) string
	rule    string
	checked bool
	// secret returns the part of the made text that is the secret; nil
	// when it is all of it.
	secret func(s string) string
	// contexts the text is put in; %s is the text. Default: contexts.
	in []string
}

// Where credentials are found in tool results.
var contexts = []string{
	"%s",
	"token: %s\n",
	`{"data": {"credential": "%s", "scopes": ["repo"]}}`,
	"export SERVICE_TOKEN=%s\n",
	"line one\nAuthorization: Bearer %s\nline three",
	"config:\n  value = '%s'\n  other = 1\n",
}

var families = []family{
	{name: "github classic PAT", make: func(f *fakes, _ testing.TB) string { return f.github("ghp") }, rule: "github-pat", checked: true},
	{name: "github OAuth", make: func(f *fakes, _ testing.TB) string { return f.github("gho") }, rule: "github-oauth", checked: true},
	{name: "github user-to-server", make: func(f *fakes, _ testing.TB) string { return f.github("ghu") }, rule: "github-app-token", checked: true},
	{name: "github server-to-server", make: func(f *fakes, _ testing.TB) string { return f.github("ghs") }, rule: "github-app-token", checked: true},
	{name: "github refresh", make: func(f *fakes, _ testing.TB) string { return f.github("ghr") }, rule: "github-refresh-token", checked: true},
	{name: "npm", make: func(f *fakes, _ testing.TB) string { return f.npm() }, rule: "npm-access-token", checked: true},
	{name: "grafana service account", make: func(f *fakes, _ testing.TB) string { return f.grafanaSA() }, rule: "grafana-service-account-token", checked: true},
	{name: "pypi", make: func(f *fakes, _ testing.TB) string { return f.pypi() }, rule: "pypi-upload-token", checked: true},
	{name: "jwt", make: func(f *fakes, _ testing.TB) string { return f.jwt() }, rule: "jwt", checked: true},
	{name: "aws access key id", make: func(f *fakes, _ testing.TB) string { return f.aws() }, rule: "aws-access-token"},
	{name: "aws secret access key", make: func(f *fakes, _ testing.TB) string {
		return "aws_secret_access_key = " + f.generic(f.awsSecret)
	}, rule: "generic-api-key", secret: func(s string) string { return s[len("aws_secret_access_key = "):] },
		in: []string{"[default]\n%s\n", "%s"}},
	{name: "gitlab PAT", make: func(f *fakes, _ testing.TB) string { return f.gitlab() }, rule: "gitlab-pat"},
	{name: "slack bot", make: func(f *fakes, _ testing.TB) string { return f.slackBot() }, rule: "slack-bot-token"},
	{name: "slack webhook", make: func(f *fakes, _ testing.TB) string { return f.slackHook() }, rule: "slack-webhook-url"},
	{name: "stripe", make: func(f *fakes, _ testing.TB) string { return f.stripe() }, rule: "stripe-access-token"},
	{name: "google api key", make: func(f *fakes, _ testing.TB) string { return f.googleAPI() }, rule: "gcp-api-key"},
	{name: "openai", make: func(f *fakes, _ testing.TB) string { return f.openai() }, rule: "openai-api-key"},
	{name: "anthropic", make: func(f *fakes, _ testing.TB) string { return f.anthropic() }, rule: "anthropic-api-key"},
	{name: "huggingface", make: func(f *fakes, _ testing.TB) string { return f.huggingface() }, rule: "huggingface-access-token"},
	{name: "sendgrid", make: func(f *fakes, _ testing.TB) string { return f.sendgrid() }, rule: "sendgrid-api-token"},
	{name: "shopify", make: func(f *fakes, _ testing.TB) string { return f.shopify() }, rule: "shopify-access-token"},
	{name: "private key", make: func(f *fakes, t testing.TB) string { return f.privateKey(t) }, rule: "private-key",
		in: []string{"%s", "%s\n", "key file:\n%s\n-- end of file --\n"}},
	{name: "database url", make: func(f *fakes, _ testing.TB) string {
		return "postgres://app:" + f.password() + "@db.internal:5432/app?sslmode=require"
	}, rule: "database-url-password", secret: func(s string) string {
		return s[strings.Index(s, "app:")+4 : strings.Index(s, "@")]
	}, in: []string{"%s", "DATABASE_URL=%s\n", `{"dsn": "%s"}`}},
	{name: "mongodb+srv url", make: func(f *fakes, _ testing.TB) string {
		return "mongodb+srv://reporting:" + f.password() + "@cluster0.ab1cd.mongodb.net/prod"
	}, rule: "database-url-password", secret: func(s string) string {
		return s[strings.Index(s, "reporting:")+10 : strings.Index(s, "@")]
	}, in: []string{"%s"}},
	{name: "generic password", make: func(f *fakes, _ testing.TB) string {
		return "DB_PASSWORD=" + f.generic(func() string { return f.chars(alnum, 20) })
	}, rule: "generic-api-key", secret: func(s string) string { return s[len("DB_PASSWORD="):] }, in: []string{"%s\n", "# db\n%s\nDB_HOST=db\n"}},
}

// TestFamilies finds each family's fakes in each context, at the right
// place, with the right rule, and only there.
func TestFamilies(t *testing.T) {
	s := Default()
	for i, fam := range families {
		t.Run(fam.name, func(t *testing.T) {
			f := newFakes(uint64(i) + 1)
			in := fam.in
			if in == nil {
				in = contexts
			}
			for round := 0; round < 8; round++ {
				made := fam.make(f, t)
				secret := made
				if fam.secret != nil {
					secret = fam.secret(made)
				}
				for _, c := range in {
					text := fmt.Sprintf(c, made)
					fs := s.Scan("result", text)
					at := strings.Index(text, secret)
					ok := false
					for _, fd := range fs {
						if fd.Rule == fam.rule && fd.Start == at && fd.End == at+len(secret) {
							ok = true
							if fd.Checked != fam.checked {
								t.Errorf("%s in %q: Checked %v, want %v", fam.rule, c, fd.Checked, fam.checked)
							}
							if fd.Where != "result" || fd.Digest != Digest(secret) {
								t.Errorf("%s: Where %q Digest %q", fam.rule, fd.Where, fd.Digest)
							}
						} else if fd.Start < at || fd.End > at+len(made)+len(c) {
							t.Errorf("%s in %q: also %s at %d:%d, outside the credential", fam.rule, c, fd.Rule, fd.Start, fd.End)
						}
					}
					if !ok {
						t.Errorf("%s not found in %q: %+v", fam.rule, text, fs)
					}
				}
			}
		})
	}
}

// TestChecksFail: a token of a checked format whose check fails is not
// a secret, for its rule nor for the generic one.
func TestChecksFail(t *testing.T) {
	f := newFakes(99)
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'a' {
			b[i] = 'b'
		} else {
			b[i] = 'a'
		}
		return string(b)
	}
	pypi := f.pypi()
	jwt := f.jwt()
	dot := strings.Index(jwt, ".")
	cases := []struct{ name, text string }{
		{"github body changed", flip(f.github("ghp"), 10)},
		{"github checksum changed", flip(f.github("gho"), 38)},
		{"npm body changed", flip(f.npm(), 8)},
		{"grafana checksum changed", flip(f.grafanaSA(), 40)},
		{"pypi truncated", pypi[:len(pypi)-8]},
		{"pypi random after the prefix", "pypi-AgEIcHlwaS5vcmc" + f.chars(urlsafe, 120)},
		{"jwt header not JSON", base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256",,"typ":"JWT"}`)) + jwt[dot:]},
		{"jwt without alg", base64.RawURLEncoding.EncodeToString([]byte(`{"typ":"JWT","kid":"k1"}`)) + jwt[dot:]},
	}
	for _, c := range cases {
		for _, ctx := range []string{"%s", "token: %s\n", "GITHUB_TOKEN=%s\n", `{"access_token": "%s"}`} {
			text := fmt.Sprintf(ctx, c.text)
			if fs := Default().Scan("", text); len(fs) > 0 {
				t.Errorf("%s in %q: %+v", c.name, text, fs)
			}
		}
	}
}

// TestScanConcurrent: one Scanner, many goroutines (go test -race),
// each finding what it finds alone; the regexes compiled on first use
// are compiled once, and so are the rules of a Scanner made from the
// index (lazy), which the goroutines' first scans compile.
func TestScanConcurrent(t *testing.T) {
	t.Run("compiled", func(t *testing.T) { scanConcurrently(t, compileDefault(t, nil)) })
	t.Run("lazy", func(t *testing.T) {
		s, err := newDefault()
		if err != nil {
			t.Fatal(err)
		}
		scanConcurrently(t, s)
	})
}

func scanConcurrently(t *testing.T, s *Scanner) {
	f := newFakes(91)
	var texts []string
	var want [][]Finding
	for _, fam := range families {
		text := "token: " + fam.make(f, t) + "\n"
		texts = append(texts, text)
	}
	for _, text := range texts {
		want = append(want, Default().Scan("", text))
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := range texts {
				j := (i + g) % len(texts)
				got := s.Scan("", texts[j])
				if len(got) != len(want[j]) {
					t.Errorf("%q: %d findings, want %d", texts[j], len(got), len(want[j]))
					return
				}
				for k := range got {
					if got[k].Rule != want[j][k].Rule || got[k].Start != want[j][k].Start || got[k].End != want[j][k].End {
						t.Errorf("%q: %+v, want %+v", texts[j], got[k], want[j][k])
					}
				}
			}
		}(g)
	}
	wg.Wait()
}
