package revision

import (
	"encoding/json"
	"testing"
)

// TestResult: a 2026-07-28 client's result says it is complete, who
// answered, and, where it is cacheable and the server said nothing,
// not to cache it; what the server said stays.
func TestResult(t *testing.T) {
	info := json.RawMessage(`{"name":"aqlguard"}`)
	tests := []struct{ method, in, want string }{
		{"tools/list", `{"tools":[]}`,
			`{"tools":[],"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"aqlguard"}}}`},
		{"tools/call", `{"content":[],"resultType":"input_required"}`,
			`{"content":[],"resultType":"input_required","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"aqlguard"}}}`},
		{"resources/read", `{"contents":[],"ttlMs":60000,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"}}}`,
			`{"contents":[],"ttlMs":60000,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"}},"resultType":"complete","cacheScope":"private"}`},
		{"subscriptions/listen", `{}`, `{"resultType":"complete"}`},
		{"tools/call", `[1]`, `[1]`},
	}
	for _, tt := range tests {
		if got := Result(tt.method, json.RawMessage(tt.in), info); string(got) != tt.want {
			t.Errorf("%s %s:\n got %s\nwant %s", tt.method, tt.in, got, tt.want)
		}
	}
}

// TestUntagged: a listen stream's id is taken off what a server sends,
// and _meta with it when nothing else was in it.
func TestUntagged(t *testing.T) {
	tests := []struct {
		in, want string
		tagged   bool
	}{
		{`{"uri":"x"}`, `{"uri":"x"}`, false},
		{`{"uri":"x","_meta":{"io.modelcontextprotocol/subscriptionId":"7"}}`, `{"uri":"x"}`, true},
		{`{"_meta":{"io.modelcontextprotocol/subscriptionId":"7","k":1}}`, `{"_meta":{"k":1}}`, true},
	}
	for _, tt := range tests {
		got, tagged := Untagged(json.RawMessage(tt.in))
		if string(got) != tt.want || tagged != tt.tagged {
			t.Errorf("Untagged(%s) = %s, %v", tt.in, got, tagged)
		}
	}
}
