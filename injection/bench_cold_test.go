package injection

import (
	"os"
	"testing"
)

// evictBuf is larger than the last-level caches of the machines we
// measure on: writing one byte per line of it pushes the detector's
// tables and lexicon out, as the serving process finds them after the
// other processes of the machine ran between two calls.
var evictBuf = make([]byte, 64<<20)

func evictCaches() {
	for i := 0; i < len(evictBuf); i += 64 {
		evictBuf[i]++
	}
}

// BenchmarkScanResult1KiBCold scans the 1 KiB result of (ai) in
// bench/RESULTS.md (the start of Go's net/http package comment, as the
// filesystem server's read_text_file returns it) with cold caches: what
// a scan costs in the serving process, where a benchmark loop keeps
// everything warm and shows a quarter of it.
func BenchmarkScanResult1KiBCold(b *testing.B) {
	raw, err := os.ReadFile("testdata/nethttp-1kib.txt")
	if err != nil {
		b.Fatal(err)
	}
	text := string(raw)
	s := New(Options{Data: true, OtherTools: manyTools(200)})
	s.Scan(text)
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		b.StopTimer()
		evictCaches()
		b.StartTimer()
		s.Scan(text)
	}
}

// BenchmarkScanResult1KiBWarm is the same scan in a warm loop.
func BenchmarkScanResult1KiBWarm(b *testing.B) {
	raw, err := os.ReadFile("testdata/nethttp-1kib.txt")
	if err != nil {
		b.Fatal(err)
	}
	text := string(raw)
	s := New(Options{Data: true, OtherTools: manyTools(200)})
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		s.Scan(text)
	}
}
