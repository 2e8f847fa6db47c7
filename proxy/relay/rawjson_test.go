package relay

import (
	"encoding/json"
	"testing"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
)

func TestSetMemberKeepsEverythingElse(t *testing.T) {
	tests := []struct {
		in, key string
		value   any
		want    string
	}{
		{`{"b":1,"a":{"x":12345678901234567890},"c":"\u003c"}`, "a", json.RawMessage(`2`), `{"b":1,"a":2,"c":"\u003c"}`},
		{`{"b":1.50}`, "z", "new", `{"b":1.50,"z":"new"}`},
		{``, "k", true, `{"k":true}`},
		{`{ "name" : "x" , "_meta" : {"progressToken":7} }`, "name", "y", `{"name":"y","_meta":{"progressToken":7}}`},
	}
	for _, tt := range tests {
		got, err := setMember(json.RawMessage(tt.in), tt.key, tt.value)
		if err != nil || string(got) != tt.want {
			t.Errorf("setMember(%s, %s) = %s, %v; want %s", tt.in, tt.key, got, err, tt.want)
		}
	}
	if _, err := setMember(json.RawMessage(`[1]`), "k", 1); err == nil {
		t.Error("setMember on an array must fail")
	}
	got, _ := deleteMember(json.RawMessage(`{"a":1,"b":2,"c":3}`), "b")
	if string(got) != `{"a":1,"c":3}` {
		t.Errorf("deleteMember: %s", got)
	}
}

func TestSpanCursor(t *testing.T) {
	c := spanCursor{Server: 2, Cursor: "page/3?x=1"}
	got, ok := decodeCursor(encodeCursor(c))
	if !ok || got != c {
		t.Errorf("round trip: %+v %v", got, ok)
	}
	for _, bad := range []string{"", "page-2", cursorPrefix + "!!", cursorPrefix + "bm90IGpzb24"} {
		if c, ok := decodeCursor(bad); ok {
			t.Errorf("decodeCursor(%q) = %+v", bad, c)
		}
	}
}

// FuzzObjectMembers: whatever a client or a server sends, splitting and
// re-joining an object keeps its meaning, and never panics.
func FuzzObjectMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":{"b":[1,2,{"c":null}]},"d":"\u0000"}`, `{"a":1,"a":2}`, `[1]`, `{"a":`, ` { "x" : 1e400 } `,
		`{"\u0061\"}":"}\\","b" :[ "]" , {"}":[]} ] ,"c":-0.5e+3}`, "{\"k\xff\":true}", `{"a":1} x`, `"s"`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		ms, err := rawjson.Split(json.RawMessage(raw))
		if err != nil || ms == nil {
			return
		}
		joined := encodeMembers(ms)
		var a, b any
		if json.Unmarshal([]byte(raw), &a) != nil {
			return // valid JSON that does not fit Go's types (1e400): nothing to compare the meaning with
		}
		if err := json.Unmarshal(joined, &b); err != nil {
			t.Fatalf("re-joined %s is not JSON: %v", joined, err)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Fatalf("meaning changed: %s -> %s", ja, jb)
		}
		if _, err := setMember(json.RawMessage(raw), "k", 1); err != nil {
			t.Fatalf("setMember on an object: %v", err)
		}
	})
}
