package link

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// syncBuffer is a bytes.Buffer safe for the writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBadLinesAreAnswered (issue 20, fault 8): on the stdio front, a line
// that is not a JSON-RPC message gets the error JSON-RPC 2.0 names for it
// and the session goes on; an unterminated object ends at its line.
func TestBadLinesAreAnswered(t *testing.T) {
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	cases := []struct {
		name, line, want string
	}{
		{"not JSON", `hello`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON"}}`},
		{"unterminated object", `{"jsonrpc":"2.0","id":9,"method":"x"`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON"}}`},
		{"empty batch", `[]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: an empty batch"}}`},
		{"a number", `42`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: not a JSON-RPC request object"}}`},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: \"id\" must be a string or a number"}}`},
		{"numeric method", `{"jsonrpc":"2.0","id":3,"method":1}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid Request: \"method\" must be a string"}}`},
		{"version 1.0", `{"jsonrpc":"1.0","id":"a","method":"ping"}`, `{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"Invalid Request: \"jsonrpc\" must be \"2.0\""}}`},
		{"deep nesting", deep, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON"}}`},
		{"a batch of junk", `[1,{"jsonrpc":"2.0","id":4,"method":7}]`, `[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: not a JSON-RPC request object"}},{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"Invalid Request: \"method\" must be a string"}}]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.line + "\n" + `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"
			var out syncBuffer
			c := NewLineConn(strings.NewReader(in), &out, nil)
			c.AnswerBadLines = true
			defer c.Close()
			m, err := c.Read(context.Background())
			if err != nil {
				t.Fatalf("the session ended on a bad line: %v", err)
			}
			if r, ok := m.(*jsonrpc.Request); !ok || r.Method != "ping" {
				t.Fatalf("the next message is %+v, want the ping after the bad line", m)
			}
			if got := strings.TrimSpace(out.String()); got != tc.want {
				t.Fatalf("answered\n %s\nwant\n %s", got, tc.want)
			}
			if !json.Valid([]byte(strings.TrimSpace(out.String()))) {
				t.Fatal("the answer is not JSON")
			}
		})
	}
}

// TestBadLinesInABatch: a batch's invalid members are answered in the
// batch's answer, in their places; its valid requests are served.
func TestBadLinesInABatch(t *testing.T) {
	var out syncBuffer
	c := NewLineConn(strings.NewReader(`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"1.0","id":2,"method":"b"}]`+"\n"), &out, nil)
	c.AnswerBadLines = true
	defer c.Close()
	m, err := c.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(context.Background(), &jsonrpc.Response{ID: m.(*jsonrpc.Request).ID, Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	want := `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Invalid Request: \"jsonrpc\" must be \"2.0\""}}]`
	if got := strings.TrimSpace(out.String()); got != want {
		t.Fatalf("batch answered\n %s\nwant\n %s", got, want)
	}
}

// TestServerJunkIsSkipped: a server's stray output on stdout is skipped
// (and reported), and a message it spreads over lines is read whole.
func TestServerJunkIsSkipped(t *testing.T) {
	in := "Server listening on stdio\n{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 5,\n  \"result\": {}\n}\n" +
		`{"jsonrpc":"2.0","id":6,"result":{}}` + "\n"
	var skipped []string
	c := NewLineConn(strings.NewReader(in), io.Discard, nil)
	c.OnBadLine = func(start []byte, why string) { skipped = append(skipped, string(start)+": "+why) }
	defer c.Close()
	for _, want := range []int64{5, 6} {
		m, err := c.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if id := m.(*jsonrpc.Response).ID.Raw(); id != want {
			t.Fatalf("read id %v, want %d", id, want)
		}
	}
	if len(skipped) != 1 || !strings.HasPrefix(skipped[0], "Server listening") {
		t.Fatalf("skipped %q", skipped)
	}
}
