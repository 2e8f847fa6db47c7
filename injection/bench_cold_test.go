package injection

import (
	"testing"

	"github.com/aqlguard/aqlguard/internal/coldcache"
)

// BenchmarkScanResult1KiBCold scans the 1 KiB result of (ai) in
// bench/RESULTS.md (the start of Go's net/http package comment, as the
// filesystem server's read_text_file returns it) with cold caches: what
// a scan costs in the serving process, where a benchmark loop keeps
// everything warm and shows a quarter of it.
func BenchmarkScanResult1KiBCold(b *testing.B) {
	text, err := coldcache.NetHTTP1KiB()
	if err != nil {
		b.Skipf("Go's net/http source: %v", err)
	}
	s := New(Options{Data: true, OtherTools: manyTools(200)})
	s.Scan(text)
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		b.StopTimer()
		coldcache.Evict()
		b.StartTimer()
		s.Scan(text)
	}
}

// BenchmarkScanResult1KiBWarm is the same scan in a warm loop.
func BenchmarkScanResult1KiBWarm(b *testing.B) {
	text, err := coldcache.NetHTTP1KiB()
	if err != nil {
		b.Skipf("Go's net/http source: %v", err)
	}
	s := New(Options{Data: true, OtherTools: manyTools(200)})
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		s.Scan(text)
	}
}
