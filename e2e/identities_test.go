package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aqlguard/aqlguard/internal/fixture/testidp"
)

// addClient runs `aqlguard serve token add` on config and returns the
// token it showed.
func addClient(t *testing.T, dir, config, name string, extra ...string) string {
	t.Helper()
	out, errOut, code := aqlguardCLI(t, dir, append([]string{"serve", "token", "add", name, "--config", config}, extra...)...)
	if code != 0 {
		t.Fatalf("serve token add %s: exit %d: %s", name, code, errOut)
	}
	tok := regexp.MustCompile(`(?m)^aqlg_[A-Z2-7]{52}$`).FindString(out)
	if tok == "" {
		t.Fatalf("serve token add showed no token:\n%s", out)
	}
	return tok
}

// TestServeIdentities: two static clients and an identity provider's
// user on one `aqlguard serve`, each its own principal. A block of one
// leaves the others working; one client's session, challenge and code
// are nothing to another; the audit names principal and client; JWTs
// that are expired, for another audience or wrongly signed get 401 with
// the WWW-Authenticate header the MCP authorization spec names; a
// revoked token is refused without a restart; no token is in the log
// or the audit.
func TestServeIdentities(t *testing.T) {
	h := newHuman(t)
	idp := testidp.New()
	defer idp.Close()
	listen := freeAddr(t)
	metricsAddr := freeAddr(t)
	resource := "http://" + listen + "/mcp"
	base := `agent = "default-agent"
` + h.config() + `
[safety]
deny = ["*drop_database*"]
auto_approve = ["echo", "get_*", "list_*"]

[serve]
metrics_listen = "` + metricsAddr + `"

[serve.oauth]
issuer = ` + tomlString(idp.URL) + `
jwks_url = ` + tomlString(idp.JWKSURL()) + `
resource = ` + tomlString(resource) + `
scopes = ["mcp"]

[[servers]]
name = "ts"
trust_first_sight = true
command = ` + tomlString(bins.testserver) + `
`
	// serve token add, as a user would, on a config file.
	cli := t.TempDir()
	cfgPath := filepath.Join(cli, "config.toml")
	writeFile(t, cfgPath, base)
	alice := addClient(t, cli, cfgPath, "alice")
	bob := addClient(t, cli, cfgPath, "bob", "--agent", "ci")
	if out, _, _ := aqlguardCLI(t, cli, "serve", "token", "list", "--config", cfgPath); !strings.Contains(out, "alice") ||
		!strings.Contains(out, "ci") || strings.Contains(out, alice) || strings.Contains(out, bob) {
		t.Errorf("serve token list:\n%s", out)
	}
	s := startServeEnv(t, readFile(t, cfgPath), listen)
	servedCfg := filepath.Join(s.dir, "config.toml")

	carolJWT := idp.Sign(idp.Claims("carol", resource))
	connect := func(token string) *mcp.ClientSession {
		t.Helper()
		cs, err := connectHTTP(t, s.url, bearerClient(token))
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	a, b, c := connect(alice), connect(bob), connect(carolJWT)
	for name, cs := range map[string]*mcp.ClientSession{"alice": a, "bob": b, "carol": c} {
		if text, isErr := callText(t, cs, "echo", map[string]any{"message": name}); isErr {
			t.Fatalf("%s's first call: %s", name, text)
		}
	}

	// alice is blocked by a deny; bob and carol go on.
	text, _ := callText(t, a, "drop_database", map[string]any{"name": "prod"})
	if !strings.Contains(text, "PERMISSION_AGENT_BLOCKED") {
		t.Fatalf("the deny: %s", text)
	}
	var refusal struct {
		Error struct {
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(text), &refusal)
	challenge, _ := refusal.Error.Details["verification_id"].(string)
	if text, _ := callText(t, a, "echo", map[string]any{"message": "again"}); !strings.Contains(text, "PERMISSION_AGENT_BLOCKED") {
		t.Errorf("alice's next call after her block: %s", text)
	}
	if text, isErr := callText(t, b, "echo", map[string]any{"message": "bob goes on"}); isErr {
		t.Errorf("bob is held by alice's block: %s", text)
	}
	if text, isErr := callText(t, c, "echo", map[string]any{"message": "carol goes on"}); isErr {
		t.Errorf("carol is held by alice's block: %s", text)
	}
	// The metrics see every principal's guard: alice blocked, ci (bob's
	// principal) not; the calls of principals serve made after it
	// started are counted.
	fams := scrape(t, "http://"+metricsAddr+"/metrics")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"aqlguard_blocked", map[string]string{"principal": "alice"}, 1},
		{"aqlguard_blocked", map[string]string{"principal": "ci"}, 0},
	} {
		if got, ok := sample(fams, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if got, _ := sample(fams, "aqlguard_calls_total", map[string]string{"server": "ts", "method": "tools/call", "decision": "allow", "outcome": "ok"}); got < 5 {
		t.Errorf("%v allowed calls counted, want the 5 of alice, bob and carol at least", got)
	}
	if got, _ := sample(fams, "aqlguard_calls_total", map[string]string{"server": "ts", "method": "tools/call", "decision": "block"}); got < 1 {
		t.Errorf("alice's blocked call was not counted")
	}
	// bob, with alice's challenge id and the code the human was shown,
	// cannot lift her block: the challenge is not his principal's.
	code := codeFor(t, h, challenge)
	if text, _ := callText(t, b, "aqlguard_verify_challenge", map[string]any{"challenge_id": challenge, "code": code}); strings.Contains(text, `"unblocked":true`) {
		t.Errorf("bob lifted alice's block: %s", text)
	}
	if text, _ := callText(t, a, "echo", map[string]any{"message": "still"}); !strings.Contains(text, "PERMISSION_AGENT_BLOCKED") {
		t.Errorf("alice is not blocked any more after bob's try: %s", text)
	}
	// bob cannot ride alice's session either.
	code1, aliceSession := post(t, bearerClient(alice), s.url, "", initializeBody)
	if code1 != http.StatusOK || aliceSession == "" {
		t.Fatalf("alice's initialize: %d", code1)
	}
	if got, _ := post(t, bearerClient(bob), s.url, aliceSession, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); got != http.StatusNotFound {
		t.Errorf("bob's request on alice's session: %d, want 404", got)
	}

	// Refused JWTs: 401 (403 for scopes) with the spec's challenge.
	claims := func(edit func(jwt.MapClaims)) jwt.MapClaims {
		c := idp.Claims("carol", resource)
		edit(c)
		return c
	}
	metadata := "http://" + listen + "/.well-known/oauth-protected-resource/mcp"
	for _, tt := range []struct {
		name, token string
		status      int
		errCode     string
	}{
		{"expired", idp.Sign(claims(func(c jwt.MapClaims) {
			c["iat"], c["nbf"], c["exp"] = time.Now().Add(-2*time.Hour).Unix(), time.Now().Add(-2*time.Hour).Unix(), time.Now().Add(-time.Hour).Unix()
		})), 401, "invalid_token"},
		{"wrong audience", idp.Sign(claims(func(c jwt.MapClaims) { c["aud"] = "https://other.example/mcp" })), 401, "invalid_token"},
		{"wrongly signed", idp.Forge(claims(func(jwt.MapClaims) {})), 401, "invalid_token"},
		{"a static client's principal", idp.Sign(claims(func(c jwt.MapClaims) { c["sub"] = "alice" })), 401, "invalid_token"},
		{"no scope", idp.Sign(claims(func(c jwt.MapClaims) { c["scope"] = "email" })), 403, "insufficient_scope"},
		{"nothing", "", 401, ""},
	} {
		req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(initializeBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		wa := res.Header.Get("WWW-Authenticate")
		if res.StatusCode != tt.status || !strings.HasPrefix(wa, "Bearer ") || !strings.Contains(wa, `resource_metadata="`+metadata+`"`) ||
			(tt.errCode != "" && !strings.Contains(wa, `error="`+tt.errCode+`"`)) {
			t.Errorf("%s: %d, WWW-Authenticate: %s", tt.name, res.StatusCode, wa)
		}
		if tt.token != "" && (strings.Contains(string(body), tt.token) || strings.Contains(wa, tt.token)) {
			t.Errorf("%s: the answer quotes the token", tt.name)
		}
	}
	// The protected resource metadata names the issuer.
	res, err := http.Get(metadata)
	if err != nil {
		t.Fatal(err)
	}
	var prm map[string]any
	_ = json.NewDecoder(res.Body).Decode(&prm)
	res.Body.Close()
	if prm["resource"] != resource || jsonString(prm["authorization_servers"]) != `["`+idp.URL+`"]` {
		t.Errorf("protected resource metadata: %v", prm)
	}

	// Revoked: bob's token is refused without a restart (the file is
	// reloaded within seconds).
	if _, errOut, code := aqlguardCLI(t, s.dir, "serve", "token", "revoke", "bob", "--config", servedCfg); code != 0 {
		t.Fatalf("revoke: %s", errOut)
	}
	revoked := false
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got, _ := post(t, bearerClient(bob), s.url, "", initializeBody); got == http.StatusUnauthorized {
			revoked = true
			break
		}
	}
	if !revoked {
		t.Error("bob's revoked token is still let in")
	}
	if got, _ := post(t, bearerClient(alice), s.url, "", initializeBody); got != http.StatusOK {
		t.Errorf("alice after bob's revocation: %d", got)
	}

	// The audit names principal and client of every call.
	out, errOut, code2 := aqlguardCLI(t, s.dir, "audit", "export", "--config", servedCfg)
	if code2 != 0 {
		t.Fatalf("audit export: %s", errOut)
	}
	seen := map[string]bool{}
	for _, r := range jsonLines(t, out) {
		if r["kind"] == "decision" {
			seen[r["principal"].(string)+"/"+stringOf(r["client"])] = true
		}
	}
	for _, want := range []string{"alice/alice", "ci/bob", "carol/oauth:test-client"} {
		if !seen[want] {
			t.Errorf("no decision of %s in the audit: %v", want, seen)
		}
	}
	for _, secret := range []string{alice, bob, carolJWT, strings.Split(carolJWT, ".")[2]} {
		if strings.Contains(out, secret) || strings.Contains(s.log.String(), secret) || strings.Contains(readFile(t, servedCfg), secret) {
			t.Errorf("a token is in the audit, the log or the config")
		}
	}
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}
