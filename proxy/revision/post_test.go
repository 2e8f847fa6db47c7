package revision

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
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
