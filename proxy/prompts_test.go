package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/guard"
	"github.com/aqlguard/aqlguard/proxy/relay"
	"github.com/aqlguard/aqlguard/store"
)

// The test binary doubles as a stdio MCP server (the Go idiom for a
// helper process): with AQLGUARD_PROXY_TEST_PROMPTS set it serves the
// prompts that comma-separated list names, each answering with
// "<AQLGUARD_PROXY_TEST_SERVER>:<its name>", so a test sees which server
// a prompts/get reached and under which name.
func TestMain(m *testing.M) {
	if list, ok := os.LookupEnv("AQLGUARD_PROXY_TEST_PROMPTS"); ok {
		servePrompts(os.Getenv("AQLGUARD_PROXY_TEST_SERVER"), strings.Split(list, ","))
		return
	}
	os.Exit(m.Run())
}

func servePrompts(server string, prompts []string) {
	s := mcp.NewServer(&mcp.Implementation{Name: "prompts-" + server, Version: "1"}, nil)
	for _, name := range prompts {
		s.AddPrompt(&mcp.Prompt{Name: name}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: server + ":" + name}}}}, nil
		})
	}
	_ = s.Run(context.Background(), &mcp.StdioTransport{})
}

// promptServer is a configured server offering prompts (servePrompts).
func promptServer(name string, prompts ...string) config.Server {
	return config.Server{Name: name, Command: os.Args[0], Transport: "stdio",
		Env:          map[string]string{"AQLGUARD_PROXY_TEST_PROMPTS": strings.Join(prompts, ","), "AQLGUARD_PROXY_TEST_SERVER": name},
		StartTimeout: config.Duration{Duration: 20 * time.Second}}
}

// promptSession is a client session of a transparent aqlguard in front
// of servers, under the policy doc (TOML).
func promptSession(t *testing.T, doc string, servers ...config.Server) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg, err := policy.Parse([]byte("mode = \"transparent\"\n"+doc), "c.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Servers = servers
	pol, err := policy.Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	g := &guard.Guard{Policy: pol, State: st, Process: "test", Log: log}
	sh := &Shared{Mode: ModeTransparent, Config: cfg, Guard: g, Log: log, Version: "test"}
	ct, srvT := mcp.NewInMemoryTransports()
	conn, err := srvT.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = relay.Serve(ctx, conn, sh.RelayConfig())
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-served
		g.Close()
		_ = st.Close()
	})
	return cs
}

// TestPromptsAreNamedAsToolsAre: prompts that two servers both name are
// shown as <server>__<name>, both of them, by the rule tools follow
// (names.Shown): the same servers always give the same names, whatever
// the client asked first, and a get reaches the server the name says,
// judged by the guard as that server's prompt. Before, the first server
// listed kept the bare name (so "greet" meant whichever server a
// session's listing met first), a name the session had not listed was
// unknown, and a prompt whose own name was another's prefixed name
// shadowed it.
func TestPromptsAreNamedAsToolsAre(t *testing.T) {
	const doc = `
[safety]
refuse = ["evil.prompt:greet"]
auto_approve = ["*.prompt:*"]
`
	servers := []config.Server{promptServer("alpha", "greet", "plan"), promptServer("evil", "greet", "alpha__greet", "audit")}
	want := map[string]string{ // the name shown → what the server answers
		"alpha__greet":       "alpha:greet",
		"plan":               "alpha:plan",
		"evil__greet":        "", // refused: the guard judges evil's prompt
		"evil__alpha__greet": "evil:alpha__greet",
		"audit":              "evil:audit",
	}
	ctx := context.Background()
	get := func(t *testing.T, cs *mcp.ClientSession, name string) (string, error) {
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name})
		if err != nil {
			return "", err
		}
		if len(res.Messages) != 1 {
			return "", fmt.Errorf("%d messages", len(res.Messages))
		}
		text, _ := res.Messages[0].Content.(*mcp.TextContent)
		if text == nil {
			return "", fmt.Errorf("content %T", res.Messages[0].Content)
		}
		return text.Text, nil
	}
	check := func(t *testing.T, cs *mcp.ClientSession, name string) {
		t.Helper()
		got, err := get(t, cs, name)
		switch w := want[name]; {
		case w == "" && err == nil:
			t.Errorf("prompts/get %s: %q, want a refusal", name, got)
		case w == "" && !strings.Contains(err.Error(), "The policy does not allow this call"):
			t.Errorf("prompts/get %s: %v, want the guard's refusal", name, err)
		case w != "" && (err != nil || got != w):
			t.Errorf("prompts/get %s: %q %v, want %q", name, got, err, w)
		}
	}
	t.Run("listed", func(t *testing.T) {
		cs := promptSession(t, doc, servers...)
		res, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range res.Prompts {
			got = append(got, p.Name)
		}
		// In the servers' order, each server's in its own (the go-sdk sorts).
		wantNames := []string{"alpha__greet", "plan", "evil__alpha__greet", "audit", "evil__greet"}
		if !slices.Equal(got, wantNames) || res.NextCursor != "" {
			t.Fatalf("prompts/list: %v (next %q), want %v", got, res.NextCursor, wantNames)
		}
		for _, name := range wantNames {
			check(t, cs, name)
		}
	})
	t.Run("not listed first", func(t *testing.T) {
		cs := promptSession(t, doc, servers...)
		for name := range want {
			check(t, cs, name)
		}
		// A name two servers share is nobody's: no server's prompt is
		// reached by it.
		if got, err := get(t, cs, "greet"); err == nil {
			t.Errorf("prompts/get greet: %q, want an unknown prompt", got)
		}
	})
}
