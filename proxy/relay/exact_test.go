package relay

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkCheckParams is what reading the judged members exactly costs
// a request before anything else reads it: a tool call with a 220-byte
// note and a _meta, and a 4 KiB file write.
func BenchmarkCheckParams(b *testing.B) {
	for name, params := range map[string]string{
		"call":  `{"name":"create_note","arguments":{"title":"groceries","body":"` + strings.Repeat("- buy milk\\n", 20) + `"},"_meta":{"progressToken":7}}`,
		"write": `{"name":"write_file","arguments":{"path":"/home/alice/Makefile","content":"` + strings.Repeat("clean:\\n\\trm -rf build\\n", 200) + `"}}`,
		"read":  `{"uri":"file:///home/alice/notes/todo.md"}`,
	} {
		raw := json.RawMessage(params)
		method := "tools/call"
		if name == "read" {
			method = "resources/read"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if err := CheckParams(method, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
