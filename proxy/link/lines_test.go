package link

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzDecodeMessage: our decoder reads every message as the go-sdk's
// does: the same messages are refused, the others encode the same.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"n":12345678901234567890}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a-1"}}`,
		`{"jsonrpc":"2.0","id":"a-1","result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"nope","data":{"x":1}}}`,
		`{"jsonrpc":"2.0","id":null,"method":null}`,
		`{"jsonrpc":"1.0","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1.5,"result":null,"error":null}`,
		`{"jsonrpc":"2.0","ID":1,"Method":"x"}`,
		`{"jsonrpc":"2.0","id":true,"method":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			// The go-sdk's Unmarshal ignores what follows a first value;
			// its stdio transport refuses it, and so do we, earlier.
			if _, err := DecodeMessage(data); err == nil {
				t.Fatalf("%s is not one JSON value but was read as a message", data)
			}
			return
		}
		ours, oerr := DecodeMessage(data)
		theirs, terr := jsonrpc.DecodeMessage(data)
		if (oerr == nil) != (terr == nil) {
			t.Fatalf("%s: ours %v (%v), the go-sdk's %v (%v)", data, ours, oerr, theirs, terr)
		}
		if oerr != nil {
			return
		}
		a, err1 := jsonrpc.EncodeMessage(ours)
		b, err2 := jsonrpc.EncodeMessage(theirs)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s:\n ours    %s %v\n go-sdk  %s %v", data, a, err1, b, err2)
		}
		// The shortcuts for a body or a line that is ours (no copy) and
		// already valid (no second check) read the same message.
		for name, decode := range map[string]func([]byte) (jsonrpc.Message, error){"DecodeOwned": DecodeOwned, "decodeValidLine": decodeValidLine} {
			m, err := decode(bytes.Clone(data))
			if err != nil {
				t.Fatalf("%s: %s refused it: %v", data, name, err)
			}
			if c, err := jsonrpc.EncodeMessage(m); err != nil || !bytes.Equal(c, a) {
				t.Fatalf("%s: %s read %s", data, name, c)
			}
		}
	})
}

// TestLineConnBatch: a batch of requests is answered with one array,
// once every response is written, in the batch's order.
func TestLineConnBatch(t *testing.T) {
	in := strings.NewReader(`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":2,"method":"b"}]` + "\n\n" +
		`{"jsonrpc":"2.0","id":3,"method":"c"}`)
	var out bytes.Buffer
	c := NewLineConn(in, &out, nil)
	defer c.Close()
	ctx := context.Background()
	var ids []jsonrpc.ID
	for range 4 {
		m, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r := m.(*jsonrpc.Request); r.IsCall() {
			ids = append(ids, r.ID)
		}
	}
	if _, err := c.Read(ctx); err != io.EOF {
		t.Fatalf("after the last message: %v, want EOF", err)
	}
	for _, i := range []int{1, 2, 0} { // answered out of order
		if err := c.Write(ctx, &jsonrpc.Response{ID: ids[i], Result: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	want := `{"jsonrpc":"2.0","id":3,"result":{}}` + "\n" + `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]` + "\n"
	if out.String() != want {
		t.Fatalf("wrote\n%s\nwant\n%s", out.String(), want)
	}
}

// TestLineConnLimits: a line over the limit is answered and the next
// one read; a closed connection's Read returns EOF even while its reader
// blocks.
func TestLineConnLimits(t *testing.T) {
	var out bytes.Buffer
	c := NewLineConn(strings.NewReader(`"`+strings.Repeat("x", MaxLineLength+1)+`"`+"\n"+`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"), &out, nil)
	c.AnswerBadLines = true
	if m, err := c.Read(context.Background()); err != nil || m.(*jsonrpc.Request).Method != "ping" {
		t.Fatalf("the line after an over-long one: %v, %v", m, err)
	}
	if !strings.Contains(out.String(), `"code":-32600`) || !strings.Contains(out.String(), "longer than") {
		t.Fatalf("an over-long line was answered %q", out.String())
	}
	pr, _ := io.Pipe()
	c = NewLineConn(pr, io.Discard, nil)
	done := make(chan error, 1)
	go func() { _, err := c.Read(context.Background()); done <- err }()
	_ = c.Close()
	if err := <-done; err != io.EOF {
		t.Fatalf("Read after Close: %v, want EOF", err)
	}
}
