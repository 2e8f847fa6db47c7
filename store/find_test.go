package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindReadsFromTheEnd: opening a state looks the head's record up
// from the segment's end (findBackward), and must answer what reading
// the segment from its start answers, for every record, past the last,
// behind a torn tail, and across lines longer than one read.
func TestFindReadsFromTheEnd(t *testing.T) {
	long := strings.Repeat("x", 150<<10) // longer than findBackward's 64 KiB read
	for _, tc := range []struct {
		name  string
		tail  string // bytes after the last complete line
		pad   func(seq uint64) string
		first uint64
	}{
		{name: "plain", first: 1, pad: func(uint64) string { return "" }},
		{name: "torn tail", first: 1, tail: `{"seq":999,"hash":"h9`, pad: func(uint64) string { return "" }},
		{name: "long lines", first: 7, pad: func(seq uint64) string {
			if seq%5 == 0 {
				return long
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var b strings.Builder
			last := tc.first + 40
			for seq := tc.first; seq <= last; seq++ {
				fmt.Fprintf(&b, `{"seq":%d,"hash":"h%d","pad":%q}`+"\n", seq, seq, tc.pad(seq))
			}
			b.WriteString(tc.tail)
			if err := os.WriteFile(filepath.Join(dir, segmentName(1)), []byte(b.String()), 0o600); err != nil {
				t.Fatal(err)
			}
			l := &auditLog{dir: dir}
			for seq := uint64(1); seq <= last+2; seq++ {
				hash, found, err := l.find(seq)
				if err != nil {
					t.Fatalf("find(%d): %v", seq, err)
				}
				want := seq >= tc.first && seq <= last
				if found != want || want && hash != fmt.Sprintf("h%d", seq) {
					t.Errorf("find(%d) = %q, %v; want found %v", seq, hash, found, want)
				}
			}
		})
	}

	// A line that does not decode on the way back hands the search to
	// the forward reading (which names such a line when it meets it
	// before the record; audit verify reads every line either way).
	dir := t.TempDir()
	body := "{\"seq\":1,\"hash\":\"h1\"}\n{\"seq\":2,\"hash\":\"h2\"}\nnot json\n{\"seq\":4,\"hash\":\"h4\"}\n"
	if err := os.WriteFile(filepath.Join(dir, segmentName(1)), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	l := &auditLog{dir: dir}
	if hash, found, err := l.find(4); err != nil || !found || hash != "h4" {
		t.Errorf("find(4) = %q, %v, %v; want h4", hash, found, err)
	}
	if hash, found, err := l.find(2); err != nil || !found || hash != "h2" {
		t.Errorf("find(2) behind a damaged record = %q, %v, %v; want h2 from the forward reading", hash, found, err)
	}
}

// BenchmarkFindHead: the head of a segment of 100,000 records, as a
// state's opening looks it up.
func BenchmarkFindHead(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	const n = 100_000
	for seq := 1; seq <= n; seq++ {
		fmt.Fprintf(&sb, `{"seq":%d,"hash":"%064d","kind":"decision","detail":"%0300d"}`+"\n", seq, seq, seq)
	}
	if err := os.WriteFile(filepath.Join(dir, segmentName(1)), []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	l := &auditLog{dir: dir}
	for b.Loop() {
		if _, found, err := l.find(n); err != nil || !found {
			b.Fatal(found, err)
		}
	}
}
