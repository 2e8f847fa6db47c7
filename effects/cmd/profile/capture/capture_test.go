package capture

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/effects"
)

// TestMain makes the test binary a stdio MCP server when the test runs it
// as one (a real process on real pipes, as the generator meets servers).
func TestMain(m *testing.M) {
	if os.Getenv("CAPTURE_TEST_SERVER") == "1" {
		pagedServer()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// pagedServer lists three tools on two pages, and between initialize and
// tools/list asks the client something and sends it a notification.
func pagedServer() {
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Cursor string `json:"cursor"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil {
			os.Exit(3)
		}
		answer := func(result string) {
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": json.RawMessage(result)})
		}
		switch req.Method {
		case "initialize":
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "starting"}})
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": "s1", "method": "roots/list"})
			answer(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"paged","version":"1"}}`)
		case "tools/list":
			if req.Params.Cursor == "" {
				answer(`{"tools":[{"name":"a","description":"A <b>&</b>","inputSchema":{"type":"object"}},` +
					`{"name":"b","inputSchema":{"type":"object","properties":{"x":{"type":"string","description":"X"}}}}],"nextCursor":"2"}`)
			} else {
				answer(`{"tools":[{"name":"c","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"_meta":{"k":1}}]}`)
			}
		}
	}
}

// TestListToolsPagesAndKeepsEveryByte: every page is read, a request
// from the server does not derail the client, and each tool is kept as
// the server wrote it (members the client does not know, <, & and all).
func TestListToolsPagesAndKeepsEveryByte(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := ListTools(ctx, []string{os.Args[0], "-test.run=^$"}, []string{"CAPTURE_TEST_SERVER=1"}, json.RawMessage(AllCapabilities))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, raw := range c.Tools {
		d, err := DefinitionOf(raw)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, d.Name)
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Fatalf("tools %v, want a, b, c from two pages", names)
	}
	if got := string(c.Tools[0]); got != `{"name":"a","description":"A <b>&</b>","inputSchema":{"type":"object"}}` {
		t.Errorf("tool a kept as %s", got)
	}
	if got := string(c.Tools[2]); got != `{"name":"c","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"_meta":{"k":1}}` {
		t.Errorf("tool c kept as %s", got)
	}
	if c.Protocol != ProtocolVersion+" (the server answered 2025-06-18)" {
		t.Errorf("protocol %q", c.Protocol)
	}
}

// TestVariantsReplaceTheVaryingText: a capture with vary has one set of
// tools per value, and its MatchKeys hold each distinct definition once,
// the captured one first.
func TestVariantsReplaceTheVaryingText(t *testing.T) {
	c := &Capture{
		Tools: []json.RawMessage{
			json.RawMessage(`{"name":"now","description":"Use 'UTC' if none is given","inputSchema":{"type":"object"}}`),
			json.RawMessage(`{"name":"sum","description":"adds","inputSchema":{"type":"object"}}`),
		},
		Vary: &Vary{Text: "'UTC'", Values: []string{"'UTC'", "'Europe/Paris'"}},
	}
	keys, err := c.MatchKeys()
	if err != nil {
		t.Fatal(err)
	}
	want := func(desc string) string {
		return effects.MatchKey(effects.Definition{Name: "now", Description: desc, InputSchema: map[string]any{"type": "object"}})
	}
	if got := keys["now"]; !slices.Equal(got, []string{want("Use 'UTC' if none is given"), want("Use 'Europe/Paris' if none is given")}) {
		t.Errorf("now: %v", got)
	}
	if len(keys["sum"]) != 1 {
		t.Errorf("sum: %v, want one key", keys["sum"])
	}
}

// FuzzDefinitionOf: whatever a server sends as a tool, reading it and
// taking its MatchKey neither panics nor gives two keys for one input.
func FuzzDefinitionOf(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "profiles", "testdata", "*.tools.json"))
	for _, file := range files {
		c, err := Read(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, raw := range c.Tools[:min(3, len(c.Tools))] {
			f.Add([]byte(raw))
		}
	}
	f.Add([]byte(`{"name":"x","inputSchema":{"type":["string"],"required":["b","a","a",1],"properties":[]}}`))
	f.Add([]byte(`{"name":"x","inputSchema":{"anyOf":[{"$ref":"#/$defs/a"}],"$defs":{"a":{"items":[{"type":"null"}]}}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		d, err := DefinitionOf(raw)
		if err != nil {
			return
		}
		if k1, k2 := effects.MatchKey(d), effects.MatchKey(d); k1 != k2 {
			panic(fmt.Sprintf("MatchKey not stable: %s, %s", k1, k2))
		}
	})
}
