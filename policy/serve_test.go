package policy

import (
	"strings"
	"testing"
)

// TestServeClientsAndOAuth: what [[serve.clients]] and [serve.oauth]
// accept, and the defaults they get.
func TestServeClientsAndOAuth(t *testing.T) {
	digest := strings.Repeat("ab", 32)
	other := strings.Repeat("cd", 32)
	oauth := "[serve.oauth]\nissuer = \"https://idp.example\"\njwks_url = \"https://idp.example/jwks\"\nresource = \"https://mcp.example/mcp\"\n"
	for _, tt := range []struct {
		name, toml, err string
	}{
		{"a client", "[[serve.clients]]\nname = \"alice\"\ntoken_sha256 = \"" + digest + "\"\n", ""},
		{"two clients, one principal", "[[serve.clients]]\nname = \"a\"\nagent = \"p\"\ntoken_sha256 = \"" + digest + "\"\n[[serve.clients]]\nname = \"b\"\nagent = \"p\"\ntoken_sha256 = \"" + other + "\"\n", ""},
		{"no name", "[[serve.clients]]\ntoken_sha256 = \"" + digest + "\"\n", "serve.clients[0].name"},
		{"the single token's name", "[[serve.clients]]\nname = \"serve-token\"\ntoken_sha256 = \"" + digest + "\"\n", "serve.clients[0].name"},
		{"a name with a colon", "[[serve.clients]]\nname = \"oauth:x\"\ntoken_sha256 = \"" + digest + "\"\n", "serve.clients[0].name"},
		{"a name twice", "[[serve.clients]]\nname = \"a\"\ntoken_sha256 = \"" + digest + "\"\n[[serve.clients]]\nname = \"a\"\ntoken_sha256 = \"" + other + "\"\n", "serve.clients[1].name"},
		{"a token twice", "[[serve.clients]]\nname = \"a\"\ntoken_sha256 = \"" + digest + "\"\n[[serve.clients]]\nname = \"b\"\ntoken_sha256 = \"" + digest + "\"\n", "serve.clients[1].token_sha256"},
		{"the token itself", "[[serve.clients]]\nname = \"a\"\ntoken_sha256 = \"aqlg_ABCDEF\"\n", "serve.clients[0].token_sha256"},
		{"an uppercase digest", "[[serve.clients]]\nname = \"a\"\ntoken_sha256 = \"" + strings.ToUpper(digest) + "\"\n", "serve.clients[0].token_sha256"},
		{"a bad agent", "[[serve.clients]]\nname = \"a\"\nagent = \"a b\"\ntoken_sha256 = \"" + digest + "\"\n", "serve.clients[0].agent"},
		{"a bad created", "[[serve.clients]]\nname = \"a\"\ncreated = \"yesterday\"\ntoken_sha256 = \"" + digest + "\"\n", "serve.clients[0].created"},
		{"clients without auth", "[serve]\nauth = \"none\"\n[[serve.clients]]\nname = \"a\"\ntoken_sha256 = \"" + digest + "\"\n", "serve.auth"},
		{"oauth", oauth, ""},
		{"oauth on loopback http", "[serve.oauth]\nissuer = \"http://127.0.0.1:9\"\njwks_url = \"http://127.0.0.1:9/jwks\"\nresource = \"http://127.0.0.1:8765/mcp\"\n", ""},
		{"oauth keys over plain http", strings.Replace(oauth, "https://idp.example/jwks", "http://idp.example/jwks", 1), "serve.oauth.jwks_url"},
		{"oauth without issuer", strings.Replace(oauth, "issuer = \"https://idp.example\"\n", "", 1), "serve.oauth.issuer"},
		{"oauth without resource", strings.Replace(oauth, "resource = \"https://mcp.example/mcp\"\n", "", 1), "serve.oauth.resource"},
		{"a resource with a fragment", strings.Replace(oauth, "/mcp\"", "/mcp#x\"", 1), "serve.oauth.resource"},
		{"HS256", oauth + "algorithms = [\"HS256\"]\n", "serve.oauth.algorithms[0]"},
		{"none", oauth + "algorithms = [\"none\"]\n", "serve.oauth.algorithms[0]"},
		{"a scope with a space", oauth + "scopes = [\"a b\"]\n", "serve.oauth.scopes[0]"},
		{"oauth without auth", "[serve]\nauth = \"none\"\n" + oauth, "serve.auth"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.toml), "config.toml")
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if o := cfg.Serve.OAuth; o != nil && (o.PrincipalClaim != "sub" || strings.Join(o.Scopes, ",") != "mcp" || len(o.Algorithms) != 3) {
					t.Errorf("defaults: %+v", o)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("got %v, want an error at %s", err, tt.err)
			}
		})
	}
}
