// Command updaterules refreshes the secrets package's ruleset from a
// gitleaks release:
//
//	go run ./secrets/internal/updaterules v8.30.1
//
// It fetches github.com/zricethezav/gitleaks/v8 at that version through
// the Go module proxy (go mod download), and writes
//
//   - secrets/gitleaks/gitleaks.toml: its config/gitleaks.toml, verbatim;
//   - secrets/gitleaks/LICENSE: its MIT license;
//   - secrets/gitleaks/VERSION: the module, version and go.sum hash;
//   - secrets/testdata/gitleaks/samples.txt: the literal true and false
//     positives of its rule definitions (cmd/generate/config/rules),
//     which the package's tests run.
//
// Then regenerate the rules' index (index_gen.go) and run the tests:
//
//	go test ./secrets -run TestDefaultIndex -update
//	go test ./secrets/...
//
// A rule that changed under one of
// tuning.go's changes, a feature the parser does not implement, or a
// sample the rules no longer agree with fails there, for a human to
// look at. Nothing of gitleaks is imported; only its data is copied.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const module = "github.com/zricethezav/gitleaks/v8"

func main() {
	if len(os.Args) != 2 || !strings.HasPrefix(os.Args[1], "v") {
		fmt.Fprintln(os.Stderr, "usage: go run ./secrets/internal/updaterules vX.Y.Z")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "updaterules:", err)
		os.Exit(1)
	}
}

func run(version string) error {
	out, err := exec.Command("go", "mod", "download", "-json", module+"@"+version).Output()
	if err != nil {
		return fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	var mod struct{ Dir, Sum, Version string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return fmt.Errorf("reading go mod download's answer: %w", err)
	}
	pkg, err := exec.Command("go", "list", "-f", "{{.Dir}}", "github.com/aqlguard/aqlguard/secrets").Output()
	if err != nil {
		return fmt.Errorf("finding the secrets package: %w", err)
	}
	dir := strings.TrimSpace(string(pkg))

	copies := map[string]string{
		filepath.Join(mod.Dir, "config", "gitleaks.toml"): filepath.Join(dir, "gitleaks", "gitleaks.toml"),
		filepath.Join(mod.Dir, "LICENSE"):                 filepath.Join(dir, "gitleaks", "LICENSE"),
	}
	for from, to := range copies {
		data, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, data, 0o644); err != nil {
			return err
		}
	}
	v := fmt.Sprintf("%s %s %s\n", module, mod.Version, mod.Sum)
	if err := os.WriteFile(filepath.Join(dir, "gitleaks", "VERSION"), []byte(v), 0o644); err != nil {
		return err
	}
	samples, err := extractSamples(filepath.Join(mod.Dir, "cmd", "generate", "config", "rules"))
	if err != nil {
		return fmt.Errorf("extracting samples: %w", err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# The literal true (tp) and false (fp) positives of the rule definitions of\n")
	fmt.Fprintf(&b, "# %s %s (cmd/generate/config/rules/*.go), extracted by\n", module, mod.Version)
	fmt.Fprintf(&b, "# secrets/internal/updaterules. Copyright (c) 2019 Zachary Rice, MIT License\n")
	fmt.Fprintf(&b, "# (secrets/gitleaks/LICENSE). One sample a line: rule id, tp or fp, Go-quoted text.\n")
	for _, s := range samples {
		fmt.Fprintf(&b, "%s\t%s\t%s\n", s.rule, s.kind, strconv.Quote(s.text))
	}
	td := filepath.Join(dir, "testdata", "gitleaks")
	if err := os.MkdirAll(td, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(td, "samples.txt"), b.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Printf("ruleset and %d samples of %s %s written; now run: go test ./secrets -run TestDefaultIndex -update && go test ./secrets/...\n", len(samples), module, mod.Version)
	return nil
}

type sample struct{ rule, kind, text string }

// extractSamples reads each rule function's tps and fps: the string
// literals (and sums of them) assigned or appended to variables named
// tps and fps, and the literal secrets given to GenerateSampleSecrets,
// in two of the forms it writes them. Secrets gitleaks generates at
// random are left out.
func extractSamples(dir string) ([]sample, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []sample
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			id := ruleID(fn)
			if id == "" {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				as, ok := n.(*ast.AssignStmt)
				if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
					return true
				}
				lhs, ok := as.Lhs[0].(*ast.Ident)
				if !ok || (lhs.Name != "tps" && lhs.Name != "fps") {
					return true
				}
				kind := lhs.Name[:2]
				for _, t := range literals(as.Rhs[0]) {
					out = append(out, sample{id, kind, t})
				}
				return false
			})
		}
	}
	return out, nil
}

// ruleID returns the RuleID of the config.Rule literal in fn.
func ruleID(fn *ast.FuncDecl) string {
	id := ""
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok || id != "" {
			return id == ""
		}
		if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "RuleID" {
			if s, ok := str(kv.Value); ok {
				id = s
			}
		}
		return true
	})
	return id
}

// literals returns the sample texts an expression for tps or fps holds.
func literals(e ast.Expr) []string {
	var out []string
	switch e := e.(type) {
	case *ast.CompositeLit:
		for _, el := range e.Elts {
			out = append(out, literals(el)...)
		}
	case *ast.CallExpr:
		name := ""
		switch f := e.Fun.(type) {
		case *ast.Ident:
			name = f.Name
		case *ast.SelectorExpr:
			name = f.Sel.Name
		}
		switch name {
		case "append":
			for _, a := range e.Args[1:] {
				out = append(out, literals(a)...)
			}
		case "GenerateSampleSecrets":
			if len(e.Args) == 2 {
				i, ok1 := str(e.Args[0])
				s, ok2 := str(e.Args[1])
				if ok1 && ok2 {
					out = append(out, i+"Token = \""+s+"\"", "{\n    \""+i+"_token\": \""+s+"\"\n}")
				}
			}
		}
	default:
		if s, ok := str(e); ok {
			out = append(out, s)
		}
	}
	return out
}

// str evaluates a string literal or a sum of them.
func str(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.ParenExpr:
		return str(e.X)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		a, ok1 := str(e.X)
		b, ok2 := str(e.Y)
		return a + b, ok1 && ok2
	}
	return "", false
}
