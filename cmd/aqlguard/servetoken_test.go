package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/policy"
)

// TestServeTokenEdits: add and revoke change [[serve.clients]] and
// nothing else of the file, comments included; what they cannot do
// safely they refuse, the file as it was.
func TestServeTokenEdits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	orig := "# mine\nagent = \"me\"\n\n[safety]\ndeny = [\"*x*\"] # keep\n"
	if err := os.WriteFile(path, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, n := range []string{"a", "b", "c"} {
		if err := serveTokenAdd(path, n, "", &out); err != nil {
			t.Fatal(err)
		}
	}
	// A table after the clients, and a comment in b's entry.
	data, _ := os.ReadFile(path)
	data = bytes.Replace(data, []byte("name = \"b\"\n"), []byte("name = \"b\" # the build box\n"), 1)
	data = append(data, "\n[verify]\ntimeout = \"1m\"\n"...)
	if err := os.WriteFile(path, data, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := serveTokenRevoke(path, "b", &out); err != nil {
		t.Fatal(err)
	}
	cfg, err := policy.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cfg.Serve.Clients {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "a,c" || cfg.Verify.Timeout.String() != "1m0s" || cfg.Agent != "me" {
		t.Errorf("after revoking b: clients %v, verify %v, agent %q", names, cfg.Verify.Timeout, cfg.Agent)
	}
	text, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(text), orig) || strings.Contains(string(text), "build box") {
		t.Errorf("the rest of the file changed:\n%s", text)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %#o", fi.Mode().Perm())
	}
	if strings.Contains(string(text), "aqlg_") {
		t.Error("a token is in the config")
	}
	for _, tt := range []struct{ name, err string }{
		{"b", "no client"},
		{"", "no client"},
	} {
		if err := serveTokenRevoke(path, tt.name, &out); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("revoke %q: %v", tt.name, err)
		}
	}
	if err := serveTokenAdd(path, "a", "", &out); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("adding a twice: %v", err)
	}
	if err := serveTokenAdd(path, "bad name", "", &out); err == nil {
		t.Error("a bad name was added")
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, text) {
		t.Error("a refused edit changed the file")
	}
	// The last clients go too.
	for _, n := range []string{"a", "c"} {
		if err := serveTokenRevoke(path, n, &out); err != nil {
			t.Fatalf("revoke %s: %v", n, err)
		}
	}
	if cfg, err := policy.Load(path); err != nil || len(cfg.Serve.Clients) != 0 {
		t.Errorf("after revoking every client: %v %+v", err, cfg)
	}
}

// TestServeTokenRevokeRefusesWhatItCannotCut: a client entry that is not
// a [[serve.clients]] table of its own lines (an inline array) is left
// for the human.
func TestServeTokenRevokeRefusesWhatItCannotCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	d := strings.Repeat("ab", 32)
	orig := "[serve]\nclients = [{ name = \"a\", token_sha256 = \"" + d + "\" }]\n"
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := serveTokenRevoke(path, "a", &bytes.Buffer{}); err == nil {
		t.Error("revoked an inline entry it cannot cut")
	}
	if data, _ := os.ReadFile(path); string(data) != orig {
		t.Error("the file changed")
	}
}

// FuzzServeTokenRevoke: whatever the file says, what revoke would write
// is exactly the file without that client, or nothing.
func FuzzServeTokenRevoke(f *testing.F) {
	d1, d2 := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	f.Add("[[serve.clients]]\nname = \"a\"\ntoken_sha256 = \""+d1+"\"\n[[serve.clients]]\nname = \"b\"\ntoken_sha256 = \""+d2+"\"\n", "a")
	f.Add("agent = \"x\"\n[[serve.clients]] # c\nname = 'a'\ntoken_sha256 = \""+d1+"\"\n[safety]\ndeny = [\"[[serve.clients]]\"]\n", "a")
	f.Add("[[serve.clients]]\nname = \"a\"\ntoken_sha256 = \""+d1+"\"\nx = \"\"\"\n[[serve.clients]]\nname = \"b\"\n\"\"\"\n", "b")
	f.Fuzz(func(t *testing.T, text, name string) {
		next, err := cutClient(text, name)
		if err != nil {
			return
		}
		before, after, err := checkEdit("config.toml", []byte(text), []byte(next))
		if err != nil {
			return
		}
		var want []string
		for _, c := range before {
			if c.Name != name {
				want = append(want, c.Name)
			}
		}
		var got []string
		for _, c := range after {
			got = append(got, c.Name)
		}
		if len(want) == len(before) {
			return // the callback refuses: nothing was taken out
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("clients %q, want %q", got, want)
		}
	})
}
