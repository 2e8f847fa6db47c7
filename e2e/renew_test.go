package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRestartedServerKeepsWhatItsClientsSet: a 2025-11-25 server that
// dies and is restarted is asked again for the log level and resource
// subscriptions its clients set; the clients never saw it die, and
// without that would wait for messages and updates that no longer come.
// Shared or a process per session alike.
func TestRestartedServerKeepsWhatItsClientsSet(t *testing.T) {
	for _, share := range []bool{false, true} {
		name := "own process"
		if share {
			name = "shared process"
		}
		t.Run(name, func(t *testing.T) {
			config := sharedConfig(t, "")
			if !share {
				config = strings.Replace(config, "share = true\n", "", 1)
			}
			s := startServeOn(t, config, "")
			loud := connectShared(t, s.url, "loud", nil)
			quiet := connectShared(t, s.url, "quiet", nil)
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			loud.setLevel(t, "debug")
			quiet.setLevel(t, "error")
			loud.subscribe(t, "file:///x", true)
			quiet.subscribe(t, "file:///gone", true)
			quiet.subscribe(t, "file:///gone", false)

			before := loud.call(t, "pid", nil, nil)
			_, _ = loud.cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}})
			waitFor(t, "the server to restart", func() bool {
				res, err := loud.cs.CallTool(ctx, &mcp.CallToolParams{Name: "pid", Arguments: map[string]any{}})
				return err == nil && !res.IsError && resultText(t, res) != before
			})
			// The restart asks the level and subscriptions again before the
			// server is told back; a quiet session's call waits for its own.
			waitFor(t, "the quiet session's server to restart", func() bool {
				res, err := quiet.cs.CallTool(ctx, &mcp.CallToolParams{Name: "pid", Arguments: map[string]any{}})
				return err == nil && !res.IsError && resultText(t, res) != before
			})

			loud.call(t, "log", map[string]any{"level": "debug", "text": "loud-debug"}, nil)
			quiet.call(t, "log", map[string]any{"level": "warning", "text": "quiet-warning"}, nil)
			quiet.call(t, "log", map[string]any{"level": "error", "text": "quiet-error"}, nil)
			quiet.call(t, "touch", map[string]any{"uri": "file:///gone"}, nil)
			loud.call(t, "touch", map[string]any{"uri": "file:///x"}, nil)
			waitFor(t, "the log messages and the update after the restart", func() bool {
				l, u, _ := loud.seen()
				q, _, _ := quiet.seen()
				return slices.Contains(l, "loud-debug") && slices.Contains(q, "quiet-error") && slices.Contains(u, "file:///x")
			})
			time.Sleep(200 * time.Millisecond)
			if _, u, _ := quiet.seen(); len(u) != 0 {
				t.Errorf("the quiet session got updates %q of what it had unsubscribed", u)
			}
			if q, _, _ := quiet.seen(); slices.Contains(q, "quiet-warning") {
				t.Errorf("the quiet session (level error) got %q after the restart", q)
			}
		})
	}
}
