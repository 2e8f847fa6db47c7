package downstream

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func drain(c *streamableConn) []jsonrpc.Message {
	var out []jsonrpc.Message
	for {
		select {
		case m := <-c.incoming:
			out = append(out, m)
		default:
			return out
		}
	}
}

func TestReadEvents(t *testing.T) {
	c := newStreamableConn("http://unused", nil)
	defer c.cancel()
	id, _ := jsonrpc.MakeID("aqlguard-1")
	call := &jsonrpc.Request{ID: id, Method: "tools/call"}
	stream := "event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p\",\"progress\":1}}\n\n" +
		": a comment\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":\"aqlguard-1\",\n" +
		"data: \"result\":{\"big\":12345678901234567890}}\n\n"
	c.readEvents(strings.NewReader(stream), call)
	got := drain(c)
	if len(got) != 2 {
		t.Fatalf("%d messages, want 2: %v", len(got), got)
	}
	if r, ok := got[1].(*jsonrpc.Response); !ok || string(r.Result) != `{"big":12345678901234567890}` {
		t.Errorf("the answer: %#v", got[1])
	}

	// A stream that ends without the answer answers with an error.
	c.readEvents(strings.NewReader("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n"), call)
	got = drain(c)
	if r, ok := got[len(got)-1].(*jsonrpc.Response); !ok || r.Error == nil {
		t.Errorf("a stream without the answer: %v", got)
	}
}

func FuzzReadEvents(f *testing.F) {
	f.Add("data: {\"jsonrpc\":\"2.0\",\"id\":\"aqlguard-1\",\"result\":{}}\n\n")
	f.Add("data: [{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]\n\ndata: {\n")
	f.Add("event: endpoint\ndata:\n\n\n\ndata: \x00\n")
	f.Fuzz(func(t *testing.T, stream string) {
		c := newStreamableConn("http://unused", nil)
		defer c.cancel()
		id, _ := jsonrpc.MakeID("aqlguard-1")
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.readEvents(strings.NewReader(stream), &jsonrpc.Request{ID: id, Method: "tools/call"})
		}()
		for {
			select {
			case <-done:
				drain(c)
				return
			case <-c.incoming:
			}
		}
	})
}
