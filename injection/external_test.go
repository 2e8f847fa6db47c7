package injection_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aqlguard/aqlguard/injection"
)

// TestExternalCorpus scans a corpus of honest descriptions kept outside
// the repository (published servers' descriptions are their authors'
// text, not ours to commit), when AQLGUARD_INJECTION_CORPUS names its
// directory:
//
//	tools.jsonl      {"source": "github", "tool": {…a tools/list entry…}}
//	texts.jsonl      {"source": "sentry", "text": "…a description…"}
//	own-names.json   {"sentry": ["find_issues", …]}   (optional)
//
// Each source's tools are scanned with every other source's tool names
// as other tools and its own as own; no definition or text may give a
// High finding.
func TestExternalCorpus(t *testing.T) {
	dir := os.Getenv("AQLGUARD_INJECTION_CORPUS")
	if dir == "" {
		t.Skip("AQLGUARD_INJECTION_CORPUS is not set")
	}
	type toolRec struct {
		Source string         `json:"source"`
		Tool   map[string]any `json:"tool"`
	}
	type textRec struct {
		Source string `json:"source"`
		Text   string `json:"text"`
	}
	var tools []toolRec
	var texts []textRec
	readLines(t, filepath.Join(dir, "tools.jsonl"), func(b []byte) {
		var r toolRec
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		tools = append(tools, r)
	})
	readLines(t, filepath.Join(dir, "texts.jsonl"), func(b []byte) {
		var r textRec
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, r)
	})
	own := map[string][]string{}
	if b, err := os.ReadFile(filepath.Join(dir, "own-names.json")); err == nil {
		if err := json.Unmarshal(b, &own); err != nil {
			t.Fatal(err)
		}
	}
	names := map[string][]string{}
	for _, r := range tools {
		if n, ok := r.Tool["name"].(string); ok {
			names[r.Source] = append(names[r.Source], n)
			own[r.Source] = append(own[r.Source], n)
		}
	}
	options := func(source string) injection.Options {
		var others []string
		for s, n := range names {
			if s != source {
				others = append(others, n...)
			}
		}
		return injection.Options{OtherTools: others, OwnTools: own[source]}
	}
	var high, low int
	judge := func(what string, fs []injection.Finding) {
		worst := injection.Confidence(0)
		for _, f := range fs {
			worst = max(worst, f.Confidence)
			if f.Confidence == injection.High {
				t.Errorf("%s: %v\n    excerpt: %s", what, f, f.Excerpt)
			}
		}
		switch worst {
		case injection.High:
			high++
		case injection.Low:
			low++
		}
	}
	for _, r := range tools {
		judge(r.Source+"/"+r.Tool["name"].(string), injection.ScanTool(r.Tool, options(r.Source)))
	}
	for _, r := range texts {
		judge(r.Source, injection.Scan(r.Text, options(r.Source)))
	}
	t.Logf("%d definitions and %d texts: %d with a High finding, %d with only Low ones", len(tools), len(texts), high, low)
}

func readLines(t *testing.T, path string, each func([]byte)) {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		each(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}
