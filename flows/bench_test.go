package flows

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/results"
)

// benchResult is what the filesystem server returns for a file of n
// bytes of Go's own documentation: the text, and the same as structured
// content.
func benchResult(b *testing.B, n int) json.RawMessage {
	b.Helper()
	src, err := os.ReadFile("../policy/doc.go")
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat(string(src), n/len(src)+1)[:n]
	raw, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}},
		"structuredContent": map[string]any{"content": text}})
	return raw
}

func benchObserve(b *testing.B, n int) {
	pol, err := policy.Compile(&policy.Config{}, "")
	if err != nil {
		b.Fatal(err)
	}
	raw := benchResult(b, n)
	var s Session
	s.Observe(Read{Method: results.ToolsCall, Server: "fs", Tool: "read_text_file", Raw: raw, At: time.Now()}, pol) // compile the rules
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.Observe(Read{Method: results.ToolsCall, Server: "fs", Tool: "read_text_file", Raw: raw, At: time.Now()}, pol)
	}
}

// BenchmarkObserve1KB is what reading a 1 KB result costs a call.
func BenchmarkObserve1KB(b *testing.B) { benchObserve(b, 1024) }

// BenchmarkObserve1MB is the same for a 1 MB result (the whole default
// budget).
func BenchmarkObserve1MB(b *testing.B) { benchObserve(b, 1<<20) }

// BenchmarkFlow is what the evaluator's input costs a call of a session
// that read a secret and a page.
func BenchmarkFlow(b *testing.B) {
	pol, _ := policy.Compile(&policy.Config{}, "")
	var s Session
	s.Observe(Read{Method: results.ToolsCall, Server: "fs", Tool: "read_file", Raw: text(awsLine), At: time.Now()}, pol)
	args := map[string]any{"url": "https://docs.example/" + strings.Repeat("a", 1000)}
	b.ReportAllocs()
	for b.Loop() {
		s.Flow(args)
	}
}
