package downstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSharedProcess: pools of one hub share one process of a server with
// share = true; their calls run side by side, a call cancelled in one
// pool cancels nothing in another, and the process ends with the last
// pool that uses it.
func TestSharedProcess(t *testing.T) {
	ctx := context.Background()
	hub := NewHub(ctx, nil)
	cfg := helper("ok", "serve", 0)
	cfg.Share = true
	var pools []*Pool
	for range 6 {
		pools = append(pools, Start(ctx, []config.Server{cfg}, Options{Version: "test", Hub: hub}))
	}
	if n := hub.Processes(); n != 1 {
		t.Fatalf("%d processes for 6 pools of a shared server, want 1", n)
	}
	var wg sync.WaitGroup
	for i, p := range pools {
		wg.Go(func() {
			for j := range 20 {
				want := fmt.Sprintf("%d-%d", i, j)
				res, err := p.Call(ctx, "ok", "echo", map[string]any{"message": want})
				if err != nil || res.Content[0].(*mcp.TextContent).Text != want {
					t.Errorf("pool %d: %v %+v", i, err, res)
					return
				}
			}
		})
	}
	// One pool's call is cancelled while another's runs.
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	hung := make(chan error, 1)
	go func() {
		_, err := pools[0].Call(cctx, "ok", "hang", map[string]any{"message": "x"})
		hung <- err
	}()
	long, cancelLong := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancelLong()
	if _, err := pools[1].Call(long, "ok", "hang", map[string]any{"message": "y"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("pool 1's own call: %v", err)
	}
	if err := <-hung; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("pool 0's cancelled call: %v", err)
	}
	wg.Wait()
	for _, p := range pools[:5] {
		_ = p.Close()
	}
	if n := hub.Processes(); n != 1 {
		t.Fatalf("%d processes while one pool still uses it, want 1", n)
	}
	if _, err := pools[5].Call(ctx, "ok", "echo", map[string]any{"message": "last"}); err != nil {
		t.Fatalf("the last pool after the others closed: %v", err)
	}
	_ = pools[5].Close()
	if n := hub.Processes(); n != 0 {
		t.Fatalf("%d processes after the last pool closed, want 0", n)
	}
}
