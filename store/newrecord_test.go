package store

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNewRecord: the one constructor sets what every record carries.
func TestNewRecord(t *testing.T) {
	at := time.Date(2026, 11, 25, 23, 0, 0, 0, time.UTC)
	r := NewRecord(at, KindOutcome, "claude", "run:42", "s1")
	if r.Time != at || r.Kind != "outcome" || r.Principal != "claude" || r.Process != "run:42" || r.Session != "s1" || r.Seq != 0 {
		t.Fatalf("%+v", r)
	}
}

// TestRecordsAreMadeByNewRecord: no code of aqlguard (tests and the
// conformance scaffolding aside) builds an audit record with a kind by
// hand: the kind of every record is one of RecordKind's, set by
// NewRecord.
func TestRecordsAreMadeByNewRecord(t *testing.T) {
	root := filepath.Join("..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".ci", "node_modules", "statetest", "testdata", "bench":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || !isRecordType(lit.Type, f.Name.Name) {
				return true
			}
			for _, e := range lit.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Kind" && !(path == filepath.Join("..", "store", "audit.go")) {
						t.Errorf("%s: an audit record built by hand (use store.NewRecord)", fset.Position(lit.Pos()))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// isRecordType reports whether expr names store.Record (Record inside
// package store).
func isRecordType(expr ast.Expr, pkg string) bool {
	switch x := expr.(type) {
	case *ast.Ident:
		return pkg == "store" && x.Name == "Record"
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == "store" && x.Sel.Name == "Record"
	}
	return false
}
