package flows

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/internal/coldcache"
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
	pol, err := policy.Compile(&config.Config{}, "")
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
	pol, _ := policy.Compile(&config.Config{}, "")
	var s Session
	s.Observe(Read{Method: results.ToolsCall, Server: "fs", Tool: "read_file", Raw: text(awsLine), At: time.Now()}, pol)
	args := map[string]any{"url": "https://docs.example/" + strings.Repeat("a", 1000)}
	b.ReportAllocs()
	for b.Loop() {
		s.Flow(args)
	}
}

// netHTTPResult is the filesystem server's read_text_file result of
// bench/RESULTS.md (ah) and (ai): the first KiB of Go's net/http package
// comment, as content and as structured content.
func netHTTPResult(b testing.TB) json.RawMessage {
	b.Helper()
	text, err := coldcache.NetHTTP1KiB()
	if err != nil {
		b.Skipf("Go's net/http source: %v", err)
	}
	raw, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}},
		"structuredContent": map[string]any{"content": text}})
	return raw
}

// BenchmarkObserve1KiBCold is Observe of the 1 KiB net/http result with
// the caches emptied before each call: what the serving process pays,
// which a warm loop shows a quarter of (bench/RESULTS.md (ai)).
func BenchmarkObserve1KiBCold(b *testing.B) {
	pol, read := oneKiBRead(b)
	var s Session
	s.Observe(read(), pol) // compile the rules
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		coldcache.Evict()
		b.StartTimer()
		s.Observe(read(), pol)
	}
}

// BenchmarkObserve1KiBWarm is the same without the eviction.
func BenchmarkObserve1KiBWarm(b *testing.B) {
	pol, err := policy.Compile(&config.Config{}, "")
	if err != nil {
		b.Fatal(err)
	}
	raw := netHTTPResult(b)
	var s Session
	s.Observe(Read{Method: results.ToolsCall, Server: "fs", Tool: "read_text_file", Raw: raw, At: time.Now()}, pol)
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.Observe(Read{Method: results.ToolsCall, Server: "fs", Tool: "read_text_file", Raw: raw, At: time.Now()}, pol)
	}
}

// BenchmarkObserve1MBPastBudget is a result 35 bytes past the default
// budget (bench/RESULTS.md (ai)'s one-mb.txt): read up to the budget,
// and handed on with the notice that its end was not scanned.
func BenchmarkObserve1MBPastBudget(b *testing.B) { benchObserve(b, 1<<20+35) }

// oneKiBRead is the default policy and the read of the 1 KiB net/http
// result through the filesystem server's read_text_file, as the cold
// benchmark and the cachegrind harness observe it.
func oneKiBRead(tb testing.TB) (*policy.Policy, func() Read) {
	tb.Helper()
	pol, err := policy.Compile(&config.Config{}, "")
	if err != nil {
		tb.Fatal(err)
	}
	raw := netHTTPResult(tb)
	return pol, func() Read {
		return Read{Method: results.ToolsCall, Server: "fs", Tool: "read_text_file", Raw: raw, At: time.Now(),
			Places: []evaluator.Place{{Arg: "path", Lexical: pathsPlace("/tmp/benchdata/one-kb.txt"), Resolved: pathsPlace("/tmp/benchdata/one-kb.txt")}},
			Home:   "/home/u"}
	}
}
