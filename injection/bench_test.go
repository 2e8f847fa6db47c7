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

// goCode is ordinary Go source, as a tool that reads files returns it.
const goCode = `// Package cache keeps recent answers per user.
package cache

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Cache maps a key to a value until it expires.
type Cache struct {
	mu      sync.Mutex
	entries map[string]entry
	ttl     time.Duration
}

type entry struct {
	value   []byte
	expires time.Time
}

// Get returns the value of key, if it has not expired.
func (c *Cache) Get(ctx context.Context, key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || time.Now().After(e.expires) {
		delete(c.entries, key)
		return nil, false
	}
	return e.value, true
}

// Put stores value under key for the cache's TTL.
func (c *Cache) Put(key string, value []byte) error {
	if len(value) > 1<<20 {
		return fmt.Errorf("cache: value of %d bytes is too large", len(value))
	}
	c.mu.Lock()
	c.entries[key] = entry{value: value, expires: time.Now().Add(c.ttl)}
	c.mu.Unlock()
	return nil
}

`

// jsonOutput is a tool's JSON output: a list of repositories.
const jsonOutput = `{"total_count":2,"items":[{"id":1296269,"node_id":"MDEwOlJlcG9zaXRvcnkxMjk2MjY5",` +
	`"name":"Hello-World","full_name":"octocat/Hello-World","private":false,"owner":{"login":"octocat","id":1,` +
	`"avatar_url":"https://github.com/images/error/octocat_happy.gif","type":"User","site_admin":false},` +
	`"html_url":"https://github.com/octocat/Hello-World","description":"This your first repo!","fork":false,` +
	`"url":"https://api.github.com/repos/octocat/Hello-World","created_at":"2011-01-26T19:01:12Z",` +
	`"updated_at":"2011-01-26T19:14:43Z","size":108,"stargazers_count":80,"language":"Go","has_issues":true,` +
	`"topics":["octocat","atom","electron","api"],"license":{"key":"mit","name":"MIT License","spdx_id":"MIT"}},` +
	`{"id":1300192,"name":"Spoon-Knife","full_name":"octocat/Spoon-Knife","private":false,` +
	`"description":"This repo is for demonstration purposes only.","default_branch":"main","open_issues_count":0}]}` + "\n"

// issueThread is an issue and its comments, as a tracker returns them.
const issueThread = `## Crash when the config file is empty

**Describe the bug**
Starting the server with an empty ` + "`config.toml`" + ` panics with a nil map.

**To reproduce**
1. Create an empty config file.
2. Run ` + "`server --config config.toml`" + `.
3. See the panic in the log:

` + "```" + `
panic: assignment to entry in nil map
goroutine 1 [running]:
main.load(0xc000010000)
	/src/server/config.go:42 +0x1d
` + "```" + `

**Expected behavior**
An empty file should give the defaults, or a clear error.

> I can reproduce this on v1.4.2 and on main. Looks like load() never makes the map.

@maintainer: would a PR that initialises the map in New() be welcome? I'd add a test too.

Thanks, yes please! Make sure the test covers a file with only comments as well.

`

// ordinary is n bytes of an ordinary text of the kind named.
func ordinary(kind string, n int) string {
	unit := map[string]string{"prose": prose(4 << 10), "go": goCode, "json": jsonOutput, "issue": issueThread}[kind]
	return strings.Repeat(unit, n/len(unit)+1)[:n]
}

// BenchmarkScanOrdinary scans the texts tools return most, at the size
// of a small result and at the default budget.
func BenchmarkScanOrdinary(b *testing.B) {
	s := New(Options{Data: true, OtherTools: manyTools(200)})
	for _, size := range []int{1 << 10, 1 << 20} {
		for _, kind := range []string{"prose", "go", "json", "issue"} {
			text := ordinary(kind, size)
			b.Run(fmt.Sprintf("%s-%s", kind, size2(size)), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					s.Scan(text)
				}
			})
		}
	}
}

func size2(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
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
