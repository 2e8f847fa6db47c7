package link

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestInbox: messages handed in are read in order; a closed inbox reads
// io.EOF (closing twice is nothing); a cancelled read says why; Drain
// sends what waits and returns without waiting for more.
func TestInbox(t *testing.T) {
	b := NewInbox()
	go func() {
		b.In <- &jsonrpc.Request{Method: "a"}
		b.In <- &jsonrpc.Request{Method: "b"}
	}()
	for _, want := range []string{"a", "b"} {
		m, err := b.Read(context.Background())
		if err != nil || m.(*jsonrpc.Request).Method != want {
			t.Fatalf("Read = %v, %v; want %s", m, err, want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Read(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled Read: %v", err)
	}
	_ = b.Close()
	_ = b.Close()
	if _, err := b.Read(context.Background()); err != io.EOF {
		t.Fatalf("Read after Close: %v, want io.EOF", err)
	}
	ch := make(chan jsonrpc.Message, 3)
	ch <- &jsonrpc.Request{Method: "x"}
	ch <- &jsonrpc.Request{Method: "y"}
	var got []string
	Drain(ch, func(m jsonrpc.Message) { got = append(got, m.(*jsonrpc.Request).Method) })
	if len(got) != 2 || got[0] != "x" || got[1] != "y" {
		t.Fatalf("Drain sent %v", got)
	}
}
