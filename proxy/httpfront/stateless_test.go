package httpfront

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/proxy/clientauth"
	"github.com/aqlguard/aqlguard/proxy/relay"
)

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// TestClientKey: the POSTs of one client share a session, whatever the
// spacing; another name or other capabilities get a session of their own.
func TestClientKey(t *testing.T) {
	meta := func(info, caps string) map[string]json.RawMessage {
		return relay.Members(relay.Members(json.RawMessage(`{"name":"t","_meta":{"io.modelcontextprotocol/clientInfo":` + info +
			`,"io.modelcontextprotocol/clientCapabilities":` + caps + `,"progressToken":1}}`))["_meta"])
	}
	alice := clientauth.Identity{Principal: "alice", Client: "alice"}
	a := clientKey(alice, meta(`{"name":"c"}`, `{"sampling":{}}`))
	if b := clientKey(alice, meta(`{ "name" : "c" }`, `{ "sampling" : {} }`)); a != b {
		t.Error("the same client, spaced differently, must share a session")
	}
	for _, other := range []map[string]json.RawMessage{meta(`{"name":"d"}`, `{"sampling":{}}`), meta(`{"name":"c"}`, `{}`),
		meta(`{"name":"c"}`, `{"sampling":{},"elicitation":{}}`)} {
		if clientKey(alice, other) == a {
			t.Errorf("%s must not share the session of another client", other)
		}
	}
	for _, id := range []clientauth.Identity{{Principal: "bob", Client: "alice"}, {Principal: "alice", Client: "bob"}, {},
		{Principal: "alice;5:alice", Client: ""}} {
		if clientKey(id, meta(`{"name":"c"}`, `{"sampling":{}}`)) == a {
			t.Errorf("%+v must not share the session of another identity", id)
		}
	}
	if strings.ContainsAny(a, `{}"`) || len(a) != 64 {
		t.Errorf("a key is a digest, not the client's words: %q", a)
	}
}
