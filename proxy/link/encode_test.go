package link

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// encodeSeeds are messages of every shape EncodeMessage writes itself or
// leaves to the go-sdk.
var encodeSeeds = []jsonrpc.Message{
	&jsonrpc.Request{ID: mustID(7), Method: "tools/call", Params: json.RawMessage(`{"name":"echo","arguments":{"message":"hi"}}`)},
	&jsonrpc.Request{ID: mustID("aqlguard-12"), Method: "tools/list"},
	&jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(" {\n \"progress\" : 1 }\n")},
	&jsonrpc.Request{ID: mustID("a\"b"), Method: "m"},
	&jsonrpc.Request{ID: mustID("é\u2028"), Method: "tools/<call>&"},
	&jsonrpc.Request{ID: mustID(int64(-1 << 52)), Params: json.RawMessage(`[1, "<b>&\u2028"]`)},
	&jsonrpc.Request{Method: "m", Params: json.RawMessage(`{"broken":`)},
	&jsonrpc.Response{ID: mustID(1), Result: json.RawMessage(`{"content":[{"type":"text","text":"hello <you> & \u00e9"}]}`)},
	&jsonrpc.Response{ID: mustID("s"), Result: json.RawMessage(`{}`)},
	&jsonrpc.Response{ID: mustID(2)},
	&jsonrpc.Response{ID: mustID(3), Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad", Data: json.RawMessage(` {"x" : 1} `)}},
	&jsonrpc.Response{ID: mustID(4), Error: &jsonrpc.Error{Code: -1, Message: "tab\there"}},
	&jsonrpc.Response{ID: mustID(5), Error: fmt.Errorf("wrapped: %w", &jsonrpc.Error{Code: 9, Message: "inner"})},
	&jsonrpc.Response{ID: mustID(6), Error: errors.New("plain")},
	&jsonrpc.Response{ID: mustID(7), Result: json.RawMessage(`nope`)},
	&jsonrpc.Response{ID: mustID(8), Error: (*jsonrpc.Error)(nil)},
	&jsonrpc.Response{Result: json.RawMessage(`1`)},
}

// mustID is an id of a string or a number (an int64 as the go-sdk keeps
// one, given as float64 as JSON decodes one).
func mustID[T string | int64 | int](v T) jsonrpc.ID {
	var raw any = v
	switch n := raw.(type) {
	case int64:
		raw = float64(n)
	case int:
		raw = float64(n)
	}
	id, err := jsonrpc.MakeID(raw)
	if err != nil {
		panic(err)
	}
	return id
}

func TestEncodeMessageIsTheSDKs(t *testing.T) {
	for i, m := range encodeSeeds {
		sameEncoding(t, fmt.Sprint("seed ", i), m)
	}
}

func sameEncoding(t *testing.T, name string, m jsonrpc.Message) {
	t.Helper()
	want, wantErr := jsonrpc.EncodeMessage(m)
	got, gotErr := EncodeMessage(m)
	if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
		t.Fatalf("%s: error %v, the go-sdk's %v", name, gotErr, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s:\n got %s\nwant %s", name, got, want)
	}
	prefix := []byte("kept\n")
	appended, err := AppendMessage(bytes.Clone(prefix), m)
	if wantErr == nil && (err != nil || !bytes.Equal(appended, append(prefix, want...))) {
		t.Fatalf("%s: AppendMessage wrote %q", name, appended)
	}
}

// FuzzEncodeMessage holds EncodeMessage to the go-sdk's bytes and errors
// for requests and responses built from arbitrary ids, names and raw
// members.
func FuzzEncodeMessage(f *testing.F) {
	for _, m := range encodeSeeds {
		switch m := m.(type) {
		case *jsonrpc.Request:
			id, _ := m.ID.Raw().(string)
			f.Add(true, id, m.ID.Raw() == nil, m.Method, []byte(m.Params), int64(0), "")
		case *jsonrpc.Response:
			var code int64
			var msg string
			if werr, ok := m.Error.(*jsonrpc.Error); ok && werr != nil {
				code, msg = werr.Code, werr.Message
			}
			f.Add(false, "", m.ID.Raw() == nil, msg, []byte(m.Result), code, msg)
		}
	}
	f.Fuzz(func(t *testing.T, request bool, id string, noID bool, name string, raw []byte, code int64, data string) {
		var jid jsonrpc.ID
		switch {
		case noID:
		case id == "":
			jid = mustID(code)
		default:
			jid = mustID(id)
		}
		if request {
			sameEncoding(t, "request", &jsonrpc.Request{ID: jid, Method: name, Params: raw})
			return
		}
		sameEncoding(t, "result", &jsonrpc.Response{ID: jid, Result: raw})
		if name != "" {
			sameEncoding(t, "error", &jsonrpc.Response{ID: jid, Error: &jsonrpc.Error{Code: code, Message: name, Data: json.RawMessage(data)}})
		}
	})
}

func BenchmarkEncodeMessage(b *testing.B) {
	resp := &jsonrpc.Response{ID: mustID(42), Result: json.RawMessage(`{"content":[{"type":"text","text":"Echo: hello"}],"structuredContent":{"echo":"hello"}}`)}
	b.Run("link", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := EncodeMessage(resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonrpc.EncodeMessage(resp); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkDecodeMessage(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":"aqlguard-42","result":{"content":[{"type":"text","text":"Echo: hello"}],"structuredContent":{"echo":"hello"}}}`)
	b.Run("copy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeMessage(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("valid-line", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeValidLine(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}
