package secrets

import (
	"os"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/internal/coldcache"
)

// ordinaryKB returns a realistic ordinary result of about 1 KB: the
// start of a GitHub REST issue (URLs at api.github.com, "auth", "token",
// "key" in the prose: the generic rule's keywords all over).
func ordinaryKB(b *testing.B) string {
	data, err := os.ReadFile("testdata/ordinary/github-issue.json")
	if err != nil {
		b.Fatal(err)
	}
	return string(data[:1024])
}

// ordinaryMB returns 1 MiB of the ordinary corpus: issues, commit log,
// Go source, lockfile, minified JavaScript, JSON, in turn.
func ordinaryMB(b *testing.B) string {
	var sb strings.Builder
	for sb.Len() < 1<<20 {
		for _, t := range corpusTexts(b)[:14] {
			sb.WriteString(t)
		}
	}
	return sb.String()[:1<<20]
}

func BenchmarkCompile(b *testing.B) {
	for b.Loop() {
		rs, err := parseRuleset(gitleaksTOML)
		if err != nil {
			b.Fatal(err)
		}
		if err := tune(rs); err != nil {
			b.Fatal(err)
		}
		if _, err := newScanner(rs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScan(b *testing.B) {
	s := Default()
	kb := ordinaryKB(b)
	f := newFakes(41)
	withSecret := kb[:400] + "\nGITHUB_TOKEN=" + f.github("ghp") + "\n" + kb[400+54:]
	code, err := os.ReadFile("testdata/ordinary/client.go.txt")
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct{ name, text string }{
		{"ordinary-1KB", kb},
		{"code-1KB", string(code[4096 : 4096+1024])},
		{"secret-1KB", withSecret[:1024]},
		{"ordinary-1MB", ordinaryMB(b)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			b.ReportAllocs()
			for b.Loop() {
				s.Scan("bench", c.text)
			}
		})
	}
}

// BenchmarkScanDense: texts made to make matching work hard, 256 KiB
// each: a line that says curl again and again (an unbounded rule's
// anchors), a key=value every 28 bytes (a finding each), private key
// headers without bodies.
func BenchmarkScanDense(b *testing.B) {
	s := Default()
	cases := []struct{ name, unit string }{
		{"curl-line", "curl x "},
		{"keys", "api_key=AbCdEf0123456789xyz "},
		{"key-headers", "-----BEGIN RSA PRIVATE KEY----- abc "},
	}
	for _, c := range cases {
		text := strings.Repeat(c.unit, (256<<10)/len(c.unit))
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				s.Scan("bench", text)
			}
		})
	}
}

// BenchmarkCarried: a 1 KB tool argument (a request with a URL and a
// JSON body) checked against 10 seen secrets; it carries none, which is
// the common case and the whole walk.
func BenchmarkCarried(b *testing.B) {
	var s Seen
	f := newFakes(42)
	for i := 0; i < 10; i++ {
		tok := f.github("ghp")
		if i%2 == 1 {
			tok = f.anthropic()
		}
		s.Add(tok, Finding{Rule: "bench", Start: 0, End: len(tok)})
	}
	arg := `{"url":"https://api.example.com/v2/reports?since=2025-03-01&format=json&fields=id,title,state,updated_at","method":"POST","headers":{"Content-Type":"application/json","Accept":"application/json"},"body":"` +
		strings.Repeat("The quarterly report lists open issues, their owners and the dates they were last updated. ", 10) + `"}`
	arg = arg[:1024]
	b.Run("1KB-10-secrets", func(b *testing.B) {
		b.SetBytes(int64(len(arg)))
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := s.Carried(arg); ok {
				b.Fatal("carried")
			}
		}
	})
	enc := strings.ReplaceAll(arg, "%", "%25")[:1000] + "%2F%2F"
	b.Run("1KB-10-secrets-percent", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		b.ReportAllocs()
		for b.Loop() {
			s.Carried(enc)
		}
	})
}

// BenchmarkScanCold: Scan of 1 KiB with the caches emptied before each
// call. "net-http" is the text of bench/RESULTS.md (ah) and (ai), the
// first KiB of Go's net/http package comment.
func BenchmarkScanCold(b *testing.B) {
	s := Default()
	netHTTP, err := coldcache.NetHTTP1KiB()
	if err != nil {
		b.Skipf("Go's net/http source: %v", err)
	}
	cases := []struct{ name, text string }{
		{"net-http-1KiB", netHTTP},
		{"ordinary-1KB", ordinaryKB(b)},
	}
	for _, c := range cases {
		s.Scan("bench", c.text)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				coldcache.Evict()
				b.StartTimer()
				s.Scan("bench", c.text)
			}
		})
		b.Run(c.name+"-warm", func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				s.Scan("bench", c.text)
			}
		})
	}
}
