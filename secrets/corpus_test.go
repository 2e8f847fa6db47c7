package secrets

import (
	"os"
	"path/filepath"
	"testing"
)

// corpusTexts returns every text of the test corpora.
func corpusTexts(t testing.TB) []string {
	t.Helper()
	var out []string
	files, err := filepath.Glob("testdata/ordinary/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(data))
	}
	return out
}
