package revision

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestClientKey: the POSTs of one client share a session, whatever the
// spacing; another name or other capabilities get a session of their own.
func TestClientKey(t *testing.T) {
	meta := func(info, caps string) map[string]json.RawMessage {
		return rawjson.Members(rawjson.Members(json.RawMessage(`{"name":"t","_meta":{"io.modelcontextprotocol/clientInfo":` + info +
			`,"io.modelcontextprotocol/clientCapabilities":` + caps + `,"progressToken":1}}`))["_meta"])
	}
	type identity struct{ principal, client string }
	alice := identity{"alice", "alice"}
	key := func(id identity, meta map[string]json.RawMessage) string {
		return ClientKey(id.principal, id.client, meta)
	}
	a := key(alice, meta(`{"name":"c"}`, `{"sampling":{}}`))
	if b := key(alice, meta(`{ "name" : "c" }`, `{ "sampling" : {} }`)); a != b {
		t.Error("the same client, spaced differently, must share a session")
	}
	for _, other := range []map[string]json.RawMessage{meta(`{"name":"d"}`, `{"sampling":{}}`), meta(`{"name":"c"}`, `{}`),
		meta(`{"name":"c"}`, `{"sampling":{},"elicitation":{}}`)} {
		if key(alice, other) == a {
			t.Errorf("%s must not share the session of another client", other)
		}
	}
	for _, id := range []identity{{"bob", "alice"}, {"alice", "bob"}, {}, {"alice;5:alice", ""}} {
		if key(id, meta(`{"name":"c"}`, `{"sampling":{}}`)) == a {
			t.Errorf("%+v must not share the session of another identity", id)
		}
	}
	if strings.ContainsAny(a, `{}"`) || len(a) != 64 {
		t.Errorf("a key is a digest, not the client's words: %q", a)
	}
}

// testPost is a front for one POST: the session is conn, events are
// recorded, errors written as the front writes them.
type testPost struct {
	conn   *Conn
	events []string
}

func (p *testPost) CheckParams(string, json.RawMessage) *jsonrpc.Error { return nil }
func (p *testPost) Open(context.Context, map[string]json.RawMessage) (*Conn, func(), int, *jsonrpc.Error) {
	return p.conn, func() {}, 0, nil
}
func (p *testPost) WriteError(w http.ResponseWriter, status int, id jsonrpc.ID, werr *jsonrpc.Error) {
	data, _ := link.EncodeMessage(&jsonrpc.Response{ID: id, Error: werr})
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
func (p *testPost) Events(http.ResponseWriter) Events { return p }
func (p *testPost) TakesEvents(r *http.Request) bool  { return false }
func (p *testPost) Send(m jsonrpc.Message) {
	data, _ := link.EncodeMessage(m)
	p.events = append(p.events, string(data))
}
func (p *testPost) Started() bool { return len(p.events) > 0 }

// TestPostGetsWhatIsItsOwn: the session sees a request id of aqlguard's;
// the POST gets its answer under its own id, its progress with its own
// token, and its events once a notification came first.
func TestPostGetsWhatIsItsOwn(t *testing.T) {
	conn := NewConn("alice")
	go func() { // the relay session
		msg, err := conn.Read(context.Background())
		if err != nil {
			return
		}
		req := msg.(*jsonrpc.Request)
		if _, ok := req.Extra.(*HTTPHeaders); !ok {
			t.Error("the request does not carry its POST's headers")
		}
		ctx := link.WithRelated(context.Background(), req.ID)
		_ = conn.Write(ctx, &jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`{"progressToken":"aqlguard-7","progress":1}`)})
		_ = conn.Write(ctx, &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{"tools":[]}`)})
	}()
	body := `{"jsonrpc":"2.0","id":"mine","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":42}}}`
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	r.Header.Set(HeaderProtocolVersion, Modern)
	r.Header.Set(HeaderMethod, "tools/list")
	host := &testPost{conn: conn}
	w := httptest.NewRecorder()
	ServePost(w, r, []byte(body), []string{"2025-11-25"}, host)
	want := []string{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":42,"progress":1}}`,
		`{"jsonrpc":"2.0","id":"mine","result":{"tools":[]}}`}
	if strings.Join(host.events, "\n") != strings.Join(want, "\n") {
		t.Errorf("the POST got\n%s\nwant\n%s", strings.Join(host.events, "\n"), strings.Join(want, "\n"))
	}
	if conn.SessionID() != "" || !conn.SharedByClients() || conn.Credential() != "alice" {
		t.Error("a 2026-07-28 client's connection is shared, has no session id, and names its credential")
	}
}
