package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsIndex (issue 31, item 8): docs/README.md links every document
// under docs/ (a folder of images by the folder), each with its line,
// and every link it holds leads to a file that exists; the README links
// the index and starts with what aqlguard does, before any command.
func TestDocsIndex(t *testing.T) {
	index, err := os.ReadFile("../docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]bool{}
	for _, m := range regexp.MustCompile(`\]\(([^)#]+)[^)]*\)`).FindAllStringSubmatch(string(index), -1) {
		target := filepath.Clean(filepath.Join("../docs", m[1]))
		links[target] = true
		if _, err := os.Stat(target); err != nil {
			t.Errorf("docs/README.md links %s, which does not exist", m[1])
		}
	}
	err = filepath.WalkDir("../docs", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if links[filepath.Clean(p)] {
				return filepath.SkipDir // linked as a folder
			}
			return nil
		}
		if p != filepath.Join("..", "docs", "README.md") && !links[filepath.Clean(p)] {
			t.Errorf("docs/README.md does not link %s", strings.TrimPrefix(p, "../"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "(docs/README.md)") {
		t.Error("the README does not link docs/README.md")
	}
	// The first screen: plain words, then the quick start; no command
	// before it, and the contributors' test command after it.
	first, _, _ := strings.Cut(string(readme), "## Quick start")
	if strings.Contains(first, "```") {
		t.Error("a command comes before the quick start")
	}
	if q, t2 := strings.Index(string(readme), "## Quick start"), strings.Index(string(readme), "bash .ci/run --quick"); t2 < q {
		t.Error("the test command comes before the quick start")
	}
}
