package secrets

import (
	"testing"
)

func TestAssigned(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"a .env", "DATABASE_PASSWORD=hunter2-prod\nLOG_LEVEL=production-debug\nAPI_KEY=\"abc def ghi jk\"\n", []string{"hunter2-prod", "abc def ghi jk"}},
		{"export, comment, CRLF", "export SESSION_SECRET=0123456789ab # rotated monthly\r\nPORT=8080\r\n", []string{"0123456789ab"}},
		{"single quotes", "STRIPE_KEY='sk_test_fake_0000'\n", []string{"sk_test_fake_0000"}},
		{"an INI credentials file", "[default]\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG\nregion = eu-west-1\n", []string{"wJalrXUtnFEMI/K7MDENG"}},
		{"an npmrc", "//registry.npmjs.org/:_authToken=npm_abcdefghijkl\n", []string{"npm_abcdefghijkl"}},
		{"a docker config", "{\n  \"auths\": {\n    \"ghcr.io\": {\n      \"auth\": \"dXNlcjpwYXNzd29yZDEyMw==\",\n", []string{"dXNlcjpwYXNzd29yZDEyMw=="}},
		{"a diff of an edit", "@@ -1,2 +1,2 @@\n-DB_PASSWORD=old-password-1\n+DB_PASSWORD=new-password-2\n LOG_LEVEL=debug\n", []string{"old-password-1", "new-password-2"}},
		{"YAML", "smtp:\n  password: correct-horse-battery\n  host: mail.example.com\n", []string{"correct-horse-battery"}},
		{"short values", "API_KEY=short\nTOKEN=\n", nil},
		{"placeholders", "API_KEY=${API_KEY_FROM_VAULT}\nTOKEN=<your token here>\nSECRET=xxxxxxxxxxxxxxxx\n", nil},
		{"names that say nothing", "REGION=eu-central-1-long\nDATABASE_HOST=db.internal.example\n", nil},
		{"prose", "The password is kept in the vault; ask ops.\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := Assigned("content[0].text", c.text)
			var got []string
			for _, f := range fs {
				got = append(got, c.text[f.Start:f.End])
				if f.Rule != AssignedRule || f.Digest != Digest(c.text[f.Start:f.End]) || f.Where != "content[0].text" {
					t.Errorf("finding %+v", f)
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("got %q, want %q", got, c.want)
				}
			}
		})
	}
}

func FuzzAssigned(f *testing.F) {
	for _, s := range []string{"A_KEY=0123456789\n", "+export TOKEN='abcdefghijk'\r\n", "x: \"", "KEY=\"unterminated value here", "-", "key:'\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, fd := range Assigned("w", text) {
			if fd.Start < 0 || fd.End > len(text) || fd.End-fd.Start < MinSeenLen {
				t.Fatalf("finding out of bounds: %+v of %q", fd, text)
			}
		}
	})
}
