package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aqlguard/aqlguard/internal/fixture/testidp"
)

// TestServeDropsIdlePrincipals (issue 32, item 6): `serve` behind an
// identity provider keeps a guard for the principals that are active,
// not for every principal it ever saw. 300 distinct JWT principals call
// in turn; once their sessions end and principal_idle_timeout passes,
// their guards are gone (the metrics list one aqlguard_blocked sample
// per guard in the process: the count of guards). A principal that
// comes back after its guard was dropped is as restricted as before: a
// blocked one is blocked, a step budget goes on where it stopped.
func TestServeDropsIdlePrincipals(t *testing.T) {
	h := newHuman(t) // silent: no check-in is approved
	idp := testidp.New()
	defer idp.Close()
	listen, metricsAddr := freeAddr(t), freeAddr(t)
	resource := "http://" + listen + "/mcp"
	config := `mode = "transparent"
agent = "default-agent"
` + h.config() + `
[safety]
max_autonomous_steps = 3
deny = ["*drop_database*"]
auto_approve = ["echo"]

[serve]
metrics_listen = "` + metricsAddr + `"
principal_idle_timeout = "1s"
max_sessions = 64

[serve.oauth]
issuer = ` + tomlString(idp.URL) + `
jwks_url = ` + tomlString(idp.JWKSURL()) + `
resource = ` + tomlString(resource) + `
scopes = ["mcp"]

[[servers]]
name = "ts"
trust_first_sight = true
command = ` + tomlString(bins.testserver) + `
share = true
`
	s := startServeEnv(t, config, listen)
	connect := func(sub string) *mcp.ClientSession {
		t.Helper()
		cs, err := connectHTTP(t, s.url, bearerClient(idp.Sign(idp.Claims(sub, resource))))
		if err != nil {
			t.Fatalf("%s connects: %v", sub, err)
		}
		return cs
	}
	// guards counts the guards in the process (the configured agent's
	// included), as the metrics list them.
	guards := func() int {
		f := scrape(t, "http://"+metricsAddr+"/metrics")["aqlguard_blocked"]
		if f == nil {
			return 0
		}
		return len(f.GetMetric())
	}
	allDropped := func() {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); guards() != 1; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d guards are left, want the configured agent's alone", guards())
			}
		}
	}

	// carol uses two of her three steps; dave blocks himself.
	carol := connect("carol")
	for i := range 2 {
		if text, isErr := callText(t, carol, "echo", map[string]any{"message": fmt.Sprint("carol ", i)}); isErr {
			t.Fatalf("carol's call %d: %s", i, text)
		}
	}
	carol.Close()
	dave := connect("dave")
	if text, _ := callText(t, dave, "drop_database", map[string]any{"name": "prod"}); !strings.Contains(text, "PERMISSION_AGENT_BLOCKED") {
		t.Fatalf("dave's deny: %s", text)
	}
	dave.Close()
	if n := guards(); n < 2 {
		t.Errorf("%d guards right after carol's and dave's sessions, want theirs still there", n)
	}
	allDropped()

	// Back after their guards were dropped.
	carol = connect("carol")
	if text, isErr := callText(t, carol, "echo", map[string]any{"message": "carol's third"}); isErr {
		t.Fatalf("carol's third step: %s", text)
	}
	if text, isErr := callText(t, carol, "echo", map[string]any{"message": "carol's fourth"}); !isErr || strings.Contains(text, "carol's fourth\"") {
		t.Errorf("carol's fourth step ran without a check-in: her budget started afresh with her new guard: %s", text)
	}
	carol.Close()
	dave = connect("dave")
	if text, _ := callText(t, dave, "echo", map[string]any{"message": "dave again"}); !strings.Contains(text, "PERMISSION_AGENT_BLOCKED") {
		t.Errorf("dave is not blocked with his new guard: %s", text)
	}
	dave.Close()

	// 300 principals in turn (four at a time, as four clients would):
	// each one's guard goes once it is idle.
	const principals, clients = 300, 4
	most := 0
	var next atomic.Int32
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < principals && !t.Failed(); i = int(next.Add(1)) - 1 {
				sub := fmt.Sprintf("p%04d", i)
				cs, err := connectHTTP(t, s.url, bearerClient(idp.Sign(idp.Claims(sub, resource))))
				if err != nil {
					t.Errorf("%s connects: %v", sub, err)
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": sub}})
				cancel()
				cs.Close()
				if err != nil || res.IsError {
					t.Errorf("%s: %v %s", sub, err, jsonString(res))
					return
				}
			}
		})
	}
	for done := false; !done; {
		ch := make(chan struct{})
		go func() { wg.Wait(); close(ch) }()
		select {
		case <-ch:
			done = true
		case <-time.After(500 * time.Millisecond):
			most = max(most, guards())
		}
	}
	allDropped()
	dropped := strings.Count(s.log.String(), "an idle principal's guard was dropped")
	t.Logf("%d principals: at most %d guards seen at once (sampled), %d drops logged", principals, most, dropped)
	if dropped < principals+4 {
		t.Errorf("%d guards dropped, want one for each of the %d principals and carol's and dave's two each", dropped, principals)
	}
}
