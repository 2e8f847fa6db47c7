//lint:file-ignore SA1019 sampling is deprecated as of MCP 2026-07-28, but servers use it today and aqlguard must carry it to 2026-07-28 clients; this test proves it does.

package e2e

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// modernVersion is the MCP revision without initialize (SEP-2575), with
// server-to-client requests carried as input_required results (SEP-2322).
const modernVersion = "2026-07-28"

// modernClient answers what the go-sdk everything-server asks of a
// client and counts what it was asked.
type modernClient struct {
	mu                         sync.Mutex
	elicited, sampled, changed int
}

func (c *modernClient) options(mrtr bool) *mcp.ClientOptions {
	o := &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.mu.Lock()
			c.elicited++
			c.mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{
				"username": "ada", "name": "Ada", "context": "the e2e test", "color": "green", "confirmed": true}}, nil
		},
		CreateMessageWithToolsHandler: func(context.Context, *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			c.mu.Lock()
			c.sampled++
			c.mu.Unlock()
			return &mcp.CreateMessageWithToolsResult{Model: "e2e-model", Role: "assistant",
				Content: []mcp.Content{&mcp.TextContent{Text: "Paris, said the e2e model"}}}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.mu.Lock()
			c.changed++
			c.mu.Unlock()
		},
	}
	if !mrtr {
		o.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	return o
}

// TestModernClient: a go-sdk client that speaks 2026-07-28 (no
// initialize; server requests as input_required results) uses the go-sdk
// everything-server through `aqlguard run`. aqlguard speaks 2025-11-25
// to the server and translates: the server's elicitation, sampling and
// roots requests reach the client inside its calls' answers, and its
// answers reach the server, whose call never stopped.
func TestModernClient(t *testing.T) {
	h := newHuman(t)
	h.answer(t, "allow")
	c := &modernClient{}
	client := c.options(true)
	g, err := launchGuard(t, guardOptions{ProtocolVersion: modernVersion, Client: client, Config: h.config() + legacyEverythingServer()})
	if err != nil {
		t.Fatal(err)
	}
	cs := g.session
	if got := cs.InitializeResult().ProtocolVersion; got != modernVersion {
		t.Fatalf("negotiated %q, want %q", got, modernVersion)
	}
	if got := cs.InitializeResult().ServerInfo; got == nil || got.Name != "mcp-conformance-test-server" {
		t.Errorf("server info %+v, want the everything-server's own", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*callTimeout)
	defer cancel()

	if tools := listTools(t, cs); len(tools) < 20 {
		t.Fatalf("%d tools listed, want the everything-server's", len(tools))
	}
	call := func(name, want string) {
		t.Helper()
		args := map[string]any{}
		switch name {
		case "test_elicitation":
			args = map[string]any{"message": "who are you?"}
		case "test_sampling":
			args = map[string]any{"prompt": "capital of France?"}
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError || !strings.Contains(resultText(t, res), want) {
			t.Fatalf("%s answered %s, want it to contain %q", name, jsonString(res), want)
		}
	}
	// The server asks the client in the middle of its call (2025-11-25);
	// the 2026-07-28 client gets it as input_required and retries.
	call("test_elicitation", "ada")
	call("test_sampling", "Paris, said the e2e model")
	// The server's own input_required results, which the go-sdk turns
	// into plain requests for a 2025-11-25 client: the same way back.
	call("test_input_required_result_elicitation", "Hello, Ada!")
	call("test_input_required_result_sampling", "Paris, said the e2e model")
	call("test_input_required_result_list_roots", "Client exposed 0 root(s)")
	c.mu.Lock()
	if c.elicited < 2 || c.sampled < 2 {
		t.Errorf("the client was asked %d elicitations and %d samplings, want 2 each", c.elicited, c.sampled)
	}
	c.mu.Unlock()
	prompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_input_required_result_prompt"})
	if err != nil || !strings.Contains(jsonString(prompt), "Context: the e2e test") {
		t.Fatalf("prompts/get with an elicitation: %v %s", err, jsonString(prompt))
	}

	// Resources and prompts, as in every revision.
	res, err := cs.ListResources(ctx, nil)
	if err != nil || len(res.Resources) == 0 {
		t.Fatalf("resources/list: %v %s", err, jsonString(res))
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: res.Resources[0].URI}); err != nil {
		t.Fatalf("resources/read: %v", err)
	}

	// List changes arrive on the client's subscriptions/listen stream.
	call("test_trigger_tool_change", "")
	waitFor(t, "tools/list_changed on the listen stream", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.changed > 0
	})
}

// TestModernRetryCannotBeForged: a 2026-07-28 retry resumes the one call
// it was given for, once. A made-up requestState, a replayed one and one
// presented for a different call are refused with an error, and the call
// that is really parked still completes.
//
// Both ways a call can need the client: a 2025-11-25 server asking in a
// request of its own (aqlguard keeps the call running and names the
// question), and a 2026-07-28 server answering input_required (aqlguard
// keeps the server's requestState and relays the server's own names).
func TestModernRetryCannotBeForged(t *testing.T) {
	t.Run("2025-11-25 server", func(t *testing.T) {
		retryCannotBeForged(t, legacyEverythingServer(), "test_elicitation", map[string]any{"message": "who?"}, "username")
	})
	t.Run("2026-07-28 server", func(t *testing.T) {
		retryCannotBeForged(t, everythingServer(), "test_input_required_result_elicitation", map[string]any{}, "name")
	})
}

func retryCannotBeForged(t *testing.T, server, tool string, args map[string]any, field string) {
	h := newHuman(t)
	h.answer(t, "allow")
	c := &modernClient{}
	g, err := launchGuard(t, guardOptions{ProtocolVersion: modernVersion, Client: c.options(false), Config: h.config() + server})
	if err != nil {
		t.Fatal(err)
	}
	cs := g.session
	ctx, cancel := context.WithTimeout(context.Background(), 2*callTimeout)
	defer cancel()

	first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.InputRequests) != 1 || first.RequestState == "" {
		t.Fatalf("want one input request and a requestState, got %s", jsonString(first))
	}
	var id string
	for id = range first.InputRequests {
	}
	if tool != "test_elicitation" && id != "user_name" {
		t.Fatalf("the input request is named %q, not the server's own user_name", id)
	}
	answer := mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{field: "grace"}}}
	refused := func(what string, p *mcp.CallToolParams) {
		t.Helper()
		res, err := cs.CallTool(ctx, p)
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
			t.Fatalf("%s: want an invalid-params error, got %v %s", what, err, jsonString(res))
		}
	}
	refused("a made-up requestState", &mcp.CallToolParams{Name: tool, Arguments: args,
		InputResponses: answer, RequestState: "aqlguard-" + strings.Repeat("A", 32)})
	refused("the state of another call", &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{},
		InputResponses: answer, RequestState: first.RequestState})
	refused("the same call with other arguments", &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"message": "rm -rf /"},
		InputResponses: answer, RequestState: first.RequestState})

	// Two retries at once with the one state: one resumes the call, the
	// other is refused.
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	outcomes := make(chan outcome, 2)
	for range 2 {
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args,
				InputResponses: answer, RequestState: first.RequestState})
			outcomes <- outcome{res, err}
		}()
	}
	resumed, refusedN := 0, 0
	for range 2 {
		o := <-outcomes
		var werr *jsonrpc.Error
		switch {
		case o.err == nil && strings.Contains(resultText(t, o.res), "grace"):
			resumed++
		case errors.As(o.err, &werr) && werr.Code == jsonrpc.CodeInvalidParams:
			refusedN++
		default:
			t.Fatalf("a concurrent retry: %v %s", o.err, jsonString(o.res))
		}
	}
	if resumed != 1 || refusedN != 1 {
		t.Fatalf("two concurrent retries with one state: %d resumed, %d refused; want 1 and 1", resumed, refusedN)
	}
	refused("a replay of a used requestState", &mcp.CallToolParams{Name: tool, Arguments: args,
		InputResponses: answer, RequestState: first.RequestState})
}

// everythingServer configures the go-sdk everything-server behind aqlguard.
func everythingServer() string {
	return "\n[[servers]]\nname = \"everything\"\ntrust_first_sight = true\ncommand = " + tomlString(bins.everything) + "\n"
}

// legacyEverythingServer is everythingServer spoken to in 2025-11-25
// only, for what a 2026-07-28 client needs translated: its tools that ask
// the client in requests of their own work in that revision alone.
func legacyEverythingServer() string {
	return everythingServer() + "protocol = \"2025-11-25\"\n"
}

// waitFor polls ok for up to 20s.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("no %s within 20s", what)
}

// TestModernClientOverHTTP: the same 2026-07-28 go-sdk client over
// Streamable HTTP to `aqlguard serve`: no session, each request on its
// own POST, a server's question carried in its call's answer, list
// changes on the client's listen stream.
func TestModernClientOverHTTP(t *testing.T) {
	url := startServe(t, allowingServe(t)+legacyEverythingServer())
	c := &modernClient{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*callTimeout)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "aqlguard-e2e", Version: "0.0.0"}, c.options(true)).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != modernVersion {
		t.Fatalf("negotiated %q over HTTP, want %q", got, modernVersion)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "who?"}})
	if err != nil || !strings.Contains(resultText(t, res), "ada") {
		t.Fatalf("test_elicitation over HTTP: %v %s", err, jsonString(res))
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_trigger_tool_change", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("test_trigger_tool_change: %v %s", err, jsonString(res))
	}
	waitFor(t, "tools/list_changed on the listen stream over HTTP", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.changed > 0
	})
}
