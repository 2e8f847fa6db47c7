//lint:file-ignore SA1019 sampling and logging are deprecated as of MCP 2026-07-28, but servers use them today and aqlguard must relay them; this test proves it does.

package e2e

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// everythingClient is a go-sdk client that can do what the npm
// server-everything asks of clients (sampling, elicitation, roots) and
// records what reaches it.
type everythingClient struct {
	mu       sync.Mutex
	logs     []string
	progress []float64
	updated  []string
	sampled  []string
	elicited int
}

func (c *everythingClient) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			for _, m := range req.Params.Messages {
				if t, ok := m.Content.(*mcp.TextContent); ok {
					c.sampled = append(c.sampled, t.Text)
				}
			}
			return &mcp.CreateMessageResult{Model: "e2e-model", Role: "assistant", Content: &mcp.TextContent{Text: "sampled answer"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.mu.Lock()
			c.elicited++
			c.mu.Unlock()
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			c.mu.Lock()
			c.logs = append(c.logs, jsonString(req.Params.Data))
			c.mu.Unlock()
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			if req.Params.ProgressToken == "e2e-progress" {
				c.progress = append(c.progress, req.Params.Progress)
			}
			c.mu.Unlock()
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			c.mu.Lock()
			c.updated = append(c.updated, req.Params.URI)
			c.mu.Unlock()
		},
	}
}

func (c *everythingClient) wait(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		c.mu.Lock()
		done := ok()
		c.mu.Unlock()
		if done {
			return
		}
	}
	t.Fatalf("no %s reached the client through aqlguard", what)
}

// TestEverythingServerThroughWrap: the npm server-everything behind
// `aqlguard run` in transparent mode, driven by a go-sdk client: lists,
// reads, prompts and completions answer as the server answers directly;
// log messages, progress and resource updates reach the client; the
// server's sampling and elicitation requests reach the client and its
// answers go back.
func TestEverythingServerThroughWrap(t *testing.T) {
	node := nodeBin(t)
	server := requireEnv(t, "AQLGUARD_E2E_EVERYTHING_SERVER")
	h := newHuman(t)
	h.answer(t, "allow")

	direct := &everythingClient{}
	dc := mcp.NewClient(&mcp.Implementation{Name: "aqlguard-e2e", Version: "0.0.0"}, direct.options())
	ctx, cancel := context.WithTimeout(context.Background(), 2*callTimeout)
	defer cancel()
	ds, err := dc.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(node, server)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()

	via := &everythingClient{}
	g, err := launchGuard(t, guardOptions{Client: via.options(), Config: `
agent = "everything-agent"
` + h.config() + `
[[servers]]
name = "everything"
trust_first_sight = true
command = ` + tomlString(node) + `
args = [` + tomlString(server) + `]
`})
	if err != nil {
		t.Fatal(err)
	}
	gs := g.session

	if got, want := gs.InitializeResult().ServerInfo.Name, ds.InitializeResult().ServerInfo.Name; got != want {
		t.Errorf("server name %q, want %q", got, want)
	}
	if got, want := jsonString(gs.InitializeResult().Capabilities.Resources), jsonString(ds.InitializeResult().Capabilities.Resources); got != want {
		t.Errorf("resources capability %s, want %s", got, want)
	}
	same := func(what string, got, want any, gerr, werr error) {
		t.Helper()
		if gerr != nil || werr != nil {
			t.Fatalf("%s: through aqlguard: %v; directly: %v", what, gerr, werr)
		}
		if g, w := jsonString(got), jsonString(want); g != w {
			t.Errorf("%s differs through aqlguard:\n got %s\nwant %s", what, g, w)
		}
	}
	gt, gerr := gs.ListTools(ctx, nil)
	dt, derr := ds.ListTools(ctx, nil)
	same("tools/list", gt, dt, gerr, derr)
	gp, gerr := gs.ListPrompts(ctx, nil)
	dp, derr := ds.ListPrompts(ctx, nil)
	same("prompts/list", gp, dp, gerr, derr)
	gr, gerr := gs.ListResources(ctx, nil)
	dr, derr := ds.ListResources(ctx, nil)
	same("resources/list", gr, dr, gerr, derr)
	if gr != nil && gr.NextCursor != "" {
		gr2, gerr := gs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: gr.NextCursor})
		dr2, derr := ds.ListResources(ctx, &mcp.ListResourcesParams{Cursor: dr.NextCursor})
		same("resources/list page 2", gr2, dr2, gerr, derr)
	}
	gtp, gerr := gs.ListResourceTemplates(ctx, nil)
	dtp, derr := ds.ListResourceTemplates(ctx, nil)
	same("resources/templates/list", gtp, dtp, gerr, derr)
	read := &mcp.ReadResourceParams{URI: "demo://resource/dynamic/text/7"}
	grr, gerr := gs.ReadResource(ctx, read)
	drr, derr := ds.ReadResource(ctx, read)
	// The text says when the server made it ("created at 8:57:39 AM"):
	// the two reads may fall on either side of a second.
	if gerr == nil && derr == nil && len(grr.Contents) == 1 && len(drr.Contents) == 1 {
		createdAt := regexp.MustCompile(`created at [0-9:]+ [AP]M`)
		grr.Contents[0].Text = createdAt.ReplaceAllString(grr.Contents[0].Text, "created at T")
		drr.Contents[0].Text = createdAt.ReplaceAllString(drr.Contents[0].Text, "created at T")
	}
	same("resources/read", grr, drr, gerr, derr)
	get := &mcp.GetPromptParams{Name: "args-prompt", Arguments: map[string]string{"city": "Lyon", "state": "Rhône"}}
	gpg, gerr := gs.GetPrompt(ctx, get)
	dpg, derr := ds.GetPrompt(ctx, get)
	same("prompts/get", gpg, dpg, gerr, derr)
	comp := &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "completable-prompt"},
		Argument: mcp.CompleteParamsArgument{Name: "department", Value: "E"}}
	gc, gerr := gs.Complete(ctx, comp)
	dc2, derr := ds.Complete(ctx, comp)
	same("completion/complete", gc, dc2, gerr, derr)

	// Logging: the level reaches the server, its messages the client.
	if err := gs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}
	call := func(name string, args map[string]any, meta mcp.Meta) *mcp.CallToolResult {
		t.Helper()
		return mustCall(t, ctx, gs, name, args, meta)
	}
	call("toggle-simulated-logging", map[string]any{}, nil)
	via.wait(t, "log message", func() bool { return len(via.logs) > 0 })
	call("toggle-simulated-logging", map[string]any{}, nil)

	// Progress: the server's progress for this call, under the client's token.
	call("trigger-long-running-operation", map[string]any{"duration": 1, "steps": 3}, mcp.Meta{"progressToken": "e2e-progress"})
	via.wait(t, "progress", func() bool { return len(via.progress) >= 3 })

	// Sampling and elicitation: the server asks the client, through aqlguard.
	res := call("trigger-sampling-request", map[string]any{"prompt": "say hello", "maxTokens": 10}, nil)
	if !strings.Contains(jsonString(res), "sampled answer") {
		t.Errorf("the client's sampling answer did not reach the server: %s", jsonString(res))
	}
	via.wait(t, "sampling request", func() bool { return len(via.sampled) > 0 })
	call("trigger-elicitation-request", map[string]any{}, nil)
	via.wait(t, "elicitation request", func() bool { return via.elicited > 0 })

	// Subscriptions: updates of a subscribed resource reach the client.
	uri := "demo://resource/dynamic/text/1"
	if err := gs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("resources/subscribe: %v", err)
	}
	call("toggle-subscriber-updates", map[string]any{}, nil)
	via.wait(t, "resource update", func() bool { return len(via.updated) > 0 })
	call("toggle-subscriber-updates", map[string]any{}, nil)
	if err := gs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Errorf("resources/unsubscribe: %v", err)
	}
}
