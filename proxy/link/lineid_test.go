package link

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// scanID runs an idScanner over data, fed in pieces split at cut.
func scanID(data []byte, cut int) json.RawMessage {
	var s idScanner
	cut = min(max(cut, 0), len(data))
	s.feed(data[:cut])
	s.feed(data[cut:])
	return s.requestID()
}

// wantID is what the scanner must find in a valid JSON text: the id
// DecodeMessage's reader reads (the last "id" member, when valid) of an
// object with a "method", as long as it is not over maxScannedID.
func wantID(data []byte) json.RawMessage {
	members, err := rawjson.Split(data)
	if err != nil || len(members) == 0 {
		return nil
	}
	if _, ok := rawjson.Get(members, "method"); !ok {
		return nil
	}
	id := idOf(data)
	if len(id) > maxScannedID {
		return nil
	}
	return id
}

// FuzzIDScanner: on JSON text the scanner reads the id the message's
// own reader does, however the line is cut into pieces; on anything
// else it yields nothing or a valid id, and never panics.
func FuzzIDScanner(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`,
		`{"method":"tools/call","params":{"arguments":{"s":"}\"]{"}},"jsonrpc":"2.0","id":"a\"b\\u00e9"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"id":{"x":1},"method":"m"}`,
		`{"jsonrpc":"2.0","id":true,"method":"m"}`,
		`{"jsonrpc":"2.0","id":1e999,"method":"m"}`,
		`{"jsonrpc":"2.0","\u0069d":-0.5e3,"me\u0074hod":"m"}`,
		`{ "id" : "x" , "method" : [1,{"a":"]"}] }`,
		`[{"jsonrpc":"2.0","id":1,"method":"m"}]`,
		`{"jsonrpc":"2.0","id":9,"method":"x"`,
		`{"id":1,"method":"m"}}`,
		`{"id":1,,"method":"m"}`,
		`"just a string"`,
		`{}`,
	} {
		f.Add([]byte(s), len(s)/2)
	}
	f.Fuzz(func(t *testing.T, data []byte, cut int) {
		whole := scanID(data, len(data))
		if cut := scanID(data, cut); !bytes.Equal(cut, whole) {
			t.Fatalf("%q: read %s whole, %s cut at %d", data, whole, cut, cut)
		}
		if json.Valid(data) {
			if want := wantID(data); !bytes.Equal(whole, want) {
				t.Fatalf("%q: scanned id %s, the message's reader reads %s", data, whole, want)
			}
			return
		}
		if whole != nil && validID(whole) == nil {
			t.Fatalf("%q: scanned %s, which is no valid id", data, whole)
		}
	})
}

// repeatReader yields n bytes of b repeated, without holding them.
type repeatReader struct {
	b    byte
	left int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.left)
	for i := range p[:n] {
		p[i] = r.b
	}
	r.left -= n
	return n, nil
}

// overLong is a reader of one request line whose params hold a string of
// size bytes: head, then the string, then tail.
func overLong(head string, size int, tail string) io.Reader {
	return io.MultiReader(strings.NewReader(head), &repeatReader{b: 'x', left: size}, strings.NewReader(tail+"\n"))
}

// TestOverLongLineAnsweredUnderItsID (issue 32, item 4): a request line
// over the limit is answered under its own id when the line holds one
// (wherever in the object it stands, as both SDKs write it), with null
// when it does not or is no request, and the session goes on.
func TestOverLongLineAnsweredUnderItsID(t *testing.T) {
	const size = MaxLineLength + 1
	cases := []struct {
		name, head, tail string
		wantID           string
	}{
		{"id first (go-sdk)", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"s":"`, `"}}}`, `7`},
		{"id last (TypeScript SDK)", `{"method":"tools/call","params":{"name":"x","arguments":{"s":"`, `"}},"jsonrpc":"2.0","id":12}`, `12`},
		{"escaped string id", `{"jsonrpc":"2.0","id":"r-\"1\"\u00e9","method":"tools/call","params":{"s":"`, `"}}`, `"r-\"1\"\u00e9"`},
		{"string in params looks like an id", `{"jsonrpc":"2.0","method":"m","params":{"id":5,"s":"\"}],\"id\":6,\"`, `"}}`, `null`},
		{"no id", `{"jsonrpc":"2.0","method":"notifications/x","params":{"s":"`, `"}}`, `null`},
		{"object id", `{"jsonrpc":"2.0","id":{"n":1},"method":"m","params":{"s":"`, `"}}`, `null`},
		{"a response", `{"jsonrpc":"2.0","id":3,"result":{"s":"`, `"}}`, `null`},
		{"a batch", `[{"jsonrpc":"2.0","id":4,"method":"m","params":{"s":"`, `"}}]`, `null`},
		{"unterminated", `{"jsonrpc":"2.0","id":5,"method":"m","params":{"s":"`, `"}`, `null`},
		{"not JSON", `hello `, ``, `null`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := io.MultiReader(overLong(tc.head, size, tc.tail), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"))
			var out syncBuffer
			c := NewLineConn(in, &out, nil)
			c.AnswerBadLines = true
			defer c.Close()
			m, err := c.Read(context.Background())
			if err != nil {
				t.Fatalf("the session ended on an over-long line: %v", err)
			}
			if r, ok := m.(*jsonrpc.Request); !ok || r.Method != "ping" {
				t.Fatalf("the next message: %v", m)
			}
			want := `{"jsonrpc":"2.0","id":` + tc.wantID + `,"error":{"code":-32600,"message":"Invalid Request: the message is longer than the limit of 16 MiB","data":{"max_line_bytes":16777216}}}` + "\n"
			if got := out.String(); got != want {
				t.Fatalf("answered\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestOverLongLineMemory: a 100 MB line costs what a line just over the
// limit does: what is read past the limit is scanned, never kept.
func TestOverLongLineMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 100 MB")
	}
	allocated := func(size int) uint64 {
		in := io.MultiReader(overLong(`{"method":"tools/call","params":{"s":"`, size, `"},"jsonrpc":"2.0","id":"big"}`),
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"))
		var out syncBuffer
		c := NewLineConn(in, &out, nil)
		c.AnswerBadLines = true
		defer c.Close()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := c.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if !strings.Contains(out.String(), `"id":"big"`) {
			t.Fatalf("answered %s", out.String())
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	atLimit, big := allocated(MaxLineLength+1), allocated(100<<20)
	if big > atLimit+1<<20 {
		t.Fatalf("a 100 MB line allocated %d MiB, one just over the limit %d MiB", big>>20, atLimit>>20)
	}
}
