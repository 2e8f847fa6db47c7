package injection

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// typicalDescription is a description of the length and kind most
// servers write.
const typicalDescription = "Read the whole of a file as text. Handles several encodings and gives detailed errors when the file cannot be read. Use this tool when you need to look at the contents of one file. Use the 'head' parameter to read only the first N lines, or 'tail' for the last N lines. IMPORTANT: paths must be absolute. Only works within allowed directories."

// manyTools are the other servers' tools of a client with a few
// servers.
func manyTools(n int) []string {
	out := append([]string(nil), defaultOthers...)
	for i := len(out); i < n; i++ {
		out = append(out, fmt.Sprintf("server%d_tool_%d", i%7, i))
	}
	return out
}

// prose is ordinary text, about n bytes: a README, an issue thread.
func prose(n int) string {
	const para = "The release notes say that the cache is now kept per user. To upgrade, stop the service, " +
		"run the migration and start it again; see https://example.org/docs/upgrade for details. " +
		"Issue #4412 reports that search for \"rm -rf\" returned nothing, which was a bug in the index.\n\n"
	return strings.Repeat(para, n/len(para)+1)[:n]
}

func BenchmarkScanDescription(b *testing.B) {
	s := New(Options{OtherTools: manyTools(200)})
	b.ReportAllocs()
	b.SetBytes(int64(len(typicalDescription)))
	for b.Loop() {
		s.Scan(typicalDescription)
	}
}

func BenchmarkScanTool(b *testing.B) {
	s := New(Options{OtherTools: manyTools(200)})
	def := decodeB(b, honestTools[0])
	b.ReportAllocs()
	for b.Loop() {
		s.ScanTool(def)
	}
}

func BenchmarkScanResult1KiB(b *testing.B) {
	s := New(Options{Data: true, OtherTools: manyTools(200)})
	text := prose(1 << 10)
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		s.Scan(text)
	}
}

func BenchmarkScan1MiB(b *testing.B) {
	s := New(Options{Data: true, OtherTools: manyTools(200)})
	text := prose(1 << 20)
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		s.Scan(text)
	}
}

func BenchmarkScanPathological1MiB(b *testing.B) {
	s := New(Options{OtherTools: manyTools(200), Budget: 2 << 20})
	for name, text := range pathological(1 << 20) {
		b.Run(strings.ReplaceAll(name, " ", "-"), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				s.Scan(text)
			}
		})
	}
}

func decodeB(b *testing.B, def string) map[string]any {
	b.Helper()
	t := &testing.T{}
	return decode(t, def)
}

// TestLinear: no text costs more than in proportion to its length. Each
// costly text is timed at 64 KiB and at 512 KiB (the best of three, so
// that a busy machine does not fail it); the larger may take at most
// 24 times as long (8 is linear).
func TestLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	s := New(Options{OtherTools: manyTools(200), Budget: 1 << 20})
	best := func(text string) time.Duration {
		d := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			s.Scan(text)
			d = min(d, time.Since(start))
		}
		return d
	}
	small, large := pathological(64<<10), pathological(512<<10)
	small["prose"], large["prose"] = prose(64<<10), prose(512<<10)
	for name := range small {
		ds, dl := best(small[name]), best(large[name])
		t.Logf("%-16s 64 KiB %9v  512 KiB %9v  ratio %.1f", name, ds, dl, float64(dl)/float64(max(ds, 1)))
		if dl > 24*ds && dl > 50*time.Millisecond {
			t.Errorf("%s: 512 KiB took %v, 64 KiB %v", name, dl, ds)
		}
	}
}
