package secrets

import (
	"strings"
	"testing"
)

func untuned(t *testing.T) *Scanner {
	t.Helper()
	rs, err := parseRuleset(gitleaksTOML)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newScanner(rs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ruleFound(fs []Finding, rule string) bool {
	for _, f := range fs {
		if f.Rule == rule {
			return true
		}
	}
	return false
}

// TestTuning shows, for each change, a text that made it necessary:
// gitleaks' rule reports it, the tuned one does not (the rules' own
// true positives still pass in TestGitleaksSamples and TestFamilies).
func TestTuning(t *testing.T) {
	before, after := untuned(t), Default()
	cases := []struct{ rule, text string }{
		{"generic-api-key", `{"cache_key": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}`},
		{"generic-api-key", "idempotency_key: 9fceb02d0ae598e95dc970b74767f19372d61af8\n"},
		{"generic-api-key", `"token_type": "01HQ3Z8K6M2N4P5R7T9V1X3Z5B"`},
		{"generic-api-key", `"keyFingerprint": "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="`},
		{"generic-api-key", `"password_changed_at": "MDQ6VXNlcjU4MzIzMQ=="`},
		{"generic-api-key", `"next_page_token": "CgwIgJ6mpAYQgICAgIAEEgdpdGVtLTQy"`},
		{"generic-api-key", "golang.org/x/oauth2 v0.37.0 h1:JUlcxA8oAtauLfiH8FX2/FkAWHAdi0QtGCGc+hofE98=\n"},
		{"generic-api-key", "Go 1.24 adds post-quantum key exchange mechanisms:\nSecP256r1MLKEM768 and SecP384r1MLKEM1024.\n"},
		{"sourcegraph-access-token", "Sourcegraph indexed commit 9fceb02d0ae598e95dc970b74767f19372d61af8 yesterday.\n"},
		{"jwt", "Paste eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c into jwt.io\n"},
	}
	for _, c := range cases {
		if !ruleFound(before.Scan("", c.text), c.rule) {
			t.Errorf("%s: gitleaks' rule does not report %q; the change is not needed for it", c.rule, c.text)
		}
		if fs := after.Scan("", c.text); len(fs) > 0 {
			t.Errorf("%s: still reported in %q: %+v", c.rule, c.text, fs)
		}
	}

	// What the changes keep reporting.
	f := newFakes(61)
	keep := []struct{ rule, text string }{
		{"generic-api-key", "client_secret: " + f.generic(func() string { return f.chars(alnum, 32) }) + "\n"},
		{"generic-api-key", `{"api_key": "` + f.generic(func() string { return f.chars(alnum, 40) }) + `"}`},
		{"generic-api-key", "private_key = " + f.generic(func() string { return f.chars(alnum, 40) }) + "\n"},
		{"generic-api-key", "api key:\n" + f.generic(func() string { return f.chars(alnum, 40) }) + "\n"},
		{"sourcegraph-access-token", "token sgp_" + f.chars(hexdigits, 40) + "\n"},
		{"sourcegraph-access-token", "token sgp_" + f.chars(hexdigits, 16) + "_" + f.chars(hexdigits, 40) + "\n"},
	}
	for _, c := range keep {
		if !ruleFound(after.Scan("", c.text), c.rule) {
			t.Errorf("%s: no longer reports %q", c.rule, c.text)
		}
	}
}

// TestDatabaseURLRule: the rule aqlguard adds.
func TestDatabaseURLRule(t *testing.T) {
	f := newFakes(62)
	pw := f.password()
	for _, u := range []string{
		"postgres://app:" + pw + "@db.internal:5432/app",
		"postgresql://reader:" + pw + "@10.0.0.5/reports?sslmode=verify-full",
		"mysql://root:" + pw + "@127.0.0.1:3306/shop",
		"mongodb+srv://svc:" + pw + "@cluster0.ab1cd.mongodb.net/prod?retryWrites=true",
		"redis://:" + pw + "@cache.internal:6379/0",
		"rediss://default:" + pw + "@redis.example.com:6380",
		"amqps://worker:" + pw + "@mq.example.com/vhost",
		"jdbc:postgresql://app:" + pw + "@db:5432/app",
	} {
		fs := Default().Scan("", "DATABASE_URL="+u+"\n")
		ok := false
		for _, fd := range fs {
			if fd.Rule == "database-url-password" && strings.Contains(u, pw) && fd.End-fd.Start == len(pw) {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s: %+v", u, fs)
		}
	}
	for _, u := range []string{
		"postgres://app:${DB_PASSWORD}@localhost:5432/app",
		"postgres://user:password@localhost/db",
		"postgresql://postgres:postgres@localhost:5432/postgres",
		"mysql://root:root@localhost/test",
		"mongodb+srv://user:<password>@cluster0.mongodb.net/",
		"redis://localhost:6379/0",
		"postgres://app:{{ .Values.password }}@db/app",
		"amqp://guest:guest@localhost:5672/",
		"postgres://u:pass@host/db",
		"https://user:hunter2-but-long@example.com/", // not a database URL
	} {
		if fs := Default().Scan("", u+"\n"); ruleFound(fs, "database-url-password") {
			t.Errorf("%s: %+v", u, fs)
		}
	}
}

// TestTuneRefusesAChangedRule: a change made for one version of a rule
// does not apply to another.
func TestTuneRefusesAChangedRule(t *testing.T) {
	rs, err := parseRuleset(gitleaksTOML)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rs.specs {
		if rs.specs[i].id == "sourcegraph-access-token" {
			rs.specs[i].tr.Regex += "x"
		}
	}
	if err := tune(rs); err == nil || !strings.Contains(err.Error(), "review the change") {
		t.Errorf("tune of a changed rule: %v", err)
	}
	for _, c := range changes {
		if c.why == "" {
			t.Errorf("%s: a change without its reason", c.rule)
		}
	}
}
