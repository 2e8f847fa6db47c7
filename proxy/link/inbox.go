package link

import (
	"context"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Inbox is the reading side of a connection whose messages are handed
// in rather than read from a stream (an HTTP session's POSTs): Read
// gives them in order until Close. A sender selects on In and Closed.
type Inbox struct {
	In     chan jsonrpc.Message
	Closed chan struct{}
	once   sync.Once
}

// NewInbox is an open, empty inbox.
func NewInbox() Inbox {
	return Inbox{In: make(chan jsonrpc.Message), Closed: make(chan struct{})}
}

// Read is the next message handed in; io.EOF once the inbox is closed.
func (b *Inbox) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-b.In:
		return m, nil
	case <-b.Closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close closes the inbox (again: nothing).
func (b *Inbox) Close() error {
	b.once.Do(func() { close(b.Closed) })
	return nil
}

// Drain sends what waits in ch, without waiting for more: what a
// request's work sent before its answer goes out before the answer.
func Drain(ch <-chan jsonrpc.Message, send func(jsonrpc.Message)) {
	for {
		select {
		case m := <-ch:
			send(m)
		default:
			return
		}
	}
}
