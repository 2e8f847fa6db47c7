package canonical

import (
	"net/url"
	"os"
	"path"
	"strings"
	"testing"
)

func TestURI(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"file:///etc/shadow", "file:///etc/shadow"},
		{"file:///tmp/../etc/shadow", "file:///etc/shadow"},
		{"file://localhost/etc/shadow", "file:///etc/shadow"},
		{"FILE://LOCALHOST/etc/shadow", "file:///etc/shadow"},
		{"file:///%65tc/shadow", "file:///etc/shadow"},
		{"file:////etc//shadow", "file:///etc/shadow"},
		{"file:///etc/./ssh/../shadow", "file:///etc/shadow"},
		{"file:/etc/shadow", "file:///etc/shadow"},
		{"file:///tmp/a%20b", "file:///tmp/a%20b"},
		{"file:///tmp/a b", "file:///tmp/a%20b"},
		{"file:///tmp/%25", "file:///tmp/%25"},
		{"file:///..", "file:///"},
		{"file://", "file:///"},
		{"file:///home/%C3%A9t%C3%A9", "file:///home/été"},
		{"HTTPS://Example.COM/a/./b/../c?q=%7e#F", "https://example.com/a/c?q=~#F"},
		{"memo://insights", "memo://insights"},
		{"test://static/resource/%31", "test://static/resource/1"},
		{"mailto:A@Example.com", "mailto:A@Example.com"},
		{"urn:isbn:0451450523", "urn:isbn:0451450523"},
		{"http://user@HOST/x%2fy", "http://user@host/x%2Fy"},
		// No single path: the caller asks.
		{"file://server/share/x", ""},
		{"file:///etc%2fshadow", ""},
		{"file:///etc%5cshadow", ""},
		{`file:///C:\Windows`, ""},
		{"file:///etc/shadow%00.txt", ""},
		{"file:///%ff", ""},
		{"file:///etc/shadow?x", ""},
		{"file:///etc/shadow#x", ""},
		{"file:relative/x", ""},
		{"/etc/shadow", ""},
		{"etc", ""},
		{"", ""},
		{"file:///%6", ""},
		{"http://x/%zz", ""},
	} {
		got, ok := URI(tc.in)
		if tc.want == "" {
			if ok {
				t.Errorf("URI(%q) = %q, want no canonical form", tc.in, got)
			}
			continue
		}
		if !ok || got != tc.want {
			t.Errorf("URI(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}

// FilePath names the path URI's canonical form names, before its dot
// segments are applied, and nothing where URI finds no canonical form.
func TestFilePath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"file:///proj/../etc/passwd", "/proj/../etc/passwd"},
		{"file://localhost/a//b/./c", "/a//b/./c"},
		{"FILE:///%2E%2E/x", "/../x"},
		{"file:///tmp/a%20b", "/tmp/a b"},
		{"file://", "/"},
		{"file://server/share", ""},
		{"file:///etc%2fshadow", ""},
		{"file:///etc/shadow?x", ""},
		{"file:relative", ""},
		{"https://example.com/x", ""},
		{"/etc/shadow", ""},
	} {
		got, ok := FilePath(tc.in)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("FilePath(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
		canon, cok := URI(tc.in)
		if ok && (!cok || canon != "file://"+encodePath(path.Clean(got))) {
			t.Errorf("FilePath(%q) = %q, but URI gives %q, %v", tc.in, got, canon, cok)
		}
	}
}

func TestPath(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/../etc/shadow": "/etc/shadow",
		"//etc///shadow":     "/etc/shadow",
		"./a/./b/":           "a/b",
		"~/x/../.ssh/id_rsa": "~/.ssh/id_rsa",
		`C:\Users\..\x`:      `C:\Users\..\x|C:/x`,
	} {
		if got := strings.Join(Path(in), "|"); got != want {
			t.Errorf("Path(%q) = %q, want %q", in, got, want)
		}
	}
	if Path("") != nil {
		t.Error("an empty path has no form")
	}
}

// FuzzCanonicalURI: canonicalisation is idempotent and never widens: a
// canonical file: URI names the path Go's own URL parser reads from the
// original (cleaned), holds no dot segment, repeated slash or escape of
// an unreserved character, and keeps the original's scheme and host.
func FuzzCanonicalURI(f *testing.F) {
	for _, s := range []string{"file:///etc/shadow", "file:///tmp/../etc/shadow", "file://localhost/etc/x", "file:///%65tc",
		"file:////etc//shadow", "FILE:///A/./b", "https://Ex.com/a/../b?c#d", "memo://x/%41", "file:///a%20b/%25", "file:///%2e%2e/etc",
		"file:///tmp/%2E%2E/etc/passwd", "x:y", "file:", "file://", "s://h/..//.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		canon, ok := URI(raw)
		if fp, fok := FilePath(raw); fok != (ok && strings.HasPrefix(canon, "file:")) ||
			fok && canon != "file://"+encodePath(path.Clean(fp)) {
			t.Fatalf("FilePath(%q) = %q, %v, but URI gives %q, %v", raw, fp, fok, canon, ok)
		}
		if !ok {
			return
		}
		again, ok2 := URI(canon)
		if !ok2 || again != canon {
			t.Fatalf("URI(%q) = %q, but URI(%q) = %q, %v: not idempotent", raw, canon, canon, again, ok2)
		}
		cu, err := url.Parse(canon)
		if err != nil {
			return // a form net/url is stricter about (a space in a host); the rest still holds
		}
		if ou, err := url.Parse(raw); err == nil && !strings.EqualFold(ou.Scheme, cu.Scheme) {
			t.Fatalf("URI(%q) = %q changed the scheme", raw, canon)
		}
		if cu.Scheme != "file" {
			return
		}
		p := strings.TrimPrefix(canon, "file://")
		if strings.Contains(p, "//") || strings.Contains(p, "/./") || strings.Contains(p, "/../") ||
			strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..") || !strings.HasPrefix(p, "/") {
			t.Fatalf("URI(%q) = %q still holds a dot segment or a repeated slash", raw, canon)
		}
		ou, err := url.Parse(raw)
		if err != nil || ou.Opaque != "" || ou.RawQuery != "" || ou.Fragment != "" || ou.ForceQuery {
			return
		}
		if want := path.Clean("/" + ou.Path); cu.Path != want {
			t.Fatalf("URI(%q) = %q names %q; net/url reads %q from the original", raw, canon, cu.Path, want)
		}
	})
}

// The examples docs/policy.md gives are what URI does.
func TestDocumentedExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "<!-- canonical-uri-examples -->")
	table, _, ok2 := strings.Cut(table, "<!-- /canonical-uri-examples -->")
	if !ok || !ok2 {
		t.Fatal("docs/policy.md has no canonical-uri-examples table")
	}
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		rows++
		sent := strings.Trim(strings.TrimSpace(cells[1]), "`")
		judged := strings.TrimSpace(cells[2])
		got, ok := URI(sent)
		if strings.HasPrefix(judged, "(asks") {
			if ok {
				t.Errorf("docs: %s asks, but URI gives %s", sent, got)
			}
			continue
		}
		if want := strings.Trim(judged, "`"); !ok || got != want {
			t.Errorf("docs: %s is judged as %s, but URI gives %q, %v", sent, want, got, ok)
		}
	}
	if rows < 5 {
		t.Errorf("only %d examples found in docs/policy.md", rows)
	}
}

// BenchmarkURI: what canonicalising costs a resources/read, for a plain
// URI (the common case) and one that needs every rewrite.
func BenchmarkURI(b *testing.B) {
	for _, raw := range []string{
		"file:///home/ana/notes/todo.md",
		"FILE://LocalHost//tmp/./x/../%65tc//shadow",
		"https://Example.COM/a/%7Euser/doc?q=1",
	} {
		b.Run(raw, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				URI(raw)
			}
		})
	}
}
