package policy

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/aqlguard/aqlguard/policy/shell"
)

func TestRequiredLiteral(t *testing.T) {
	tests := []struct{ glob, want string }{
		{"drop_*", "drop_"},
		{"*.deploy12_*", ".deploy12_"},
		{"*rm -rf /3*", "rm -rf /3"},
		{"*", ""},
		{"{get,list}_*", "_"},
		{"*.{list,search}7_*", "7_"},
		{"a?bcd", "bcd"},
		{"[abc]xyz[!q]w", "xyz"},
		{`\*literal\?`, "*literal?"},
		{"x{a,{b,c}}yy", "yy"},
		{"ab!cd", "ab"}, // '!' ends a run: shorter is never wrong
		// Inside a class, braces and commas are plain characters.
		{"[!}0]", ""},
		{"*[}]abc*", "abc"},
		{"x[{,]yz*", "yz"},
		{"{a,[}]b}cd", "cd"},
		{"[a-]]qq", "qq"}, // LO-HI takes any rune as HI
		{"[é-ü]zz", "zz"},
	}
	for _, tt := range tests {
		if got := requiredLiteral(tt.glob); got != tt.want {
			t.Errorf("requiredLiteral(%q) = %q, want %q", tt.glob, got, tt.want)
		}
	}
}

// TestPatternIndexFindsEveryMatch: the candidates of a subject include
// every pattern that matches it, among many that do not.
func TestPatternIndexFindsEveryMatch(t *testing.T) {
	var pats []Pattern
	for _, src := range []string{"drop_*", "*.wipe_*", "*rm -rf /*", "get_*", "*", "{a,b}c*", "*secret*", "*.env", "sudo*"} {
		p, err := CompilePattern(src)
		if err != nil {
			t.Fatal(err)
		}
		pats = append(pats, p)
	}
	ix := NewPatternIndex(pats)
	for _, subject := range []string{"drop_users", "db.wipe_all", "get_x", "ac", "bcd", "my secret", "/app/.env", "nothing here", ""} {
		set := NewCandidates(ix.Len())
		ix.Always(set)
		ix.Mark(subject, set)
		for i, p := range pats {
			if p.MatchNormalized(subject) && !set.Has(i) {
				t.Errorf("%q matches %q but is not a candidate", p.Source, subject)
			}
		}
		if set.Has(0) && subject != "drop_users" {
			t.Errorf("drop_* is a candidate for %q", subject)
		}
	}
}

// FuzzPatternIndex: whatever the patterns and the subject, every pattern
// whose glob matches the subject (or whose command name glob matches it,
// read as a command's name) is among its candidates.
func FuzzPatternIndex(f *testing.F) {
	f.Add("drop_*\n*rm -rf*\n{a,b}*c", "rm")
	f.Add(`\*x*`+"\n[a-c]yz*", "*xq")
	f.Add("*.{list,search}_*", "fs.search_files")
	f.Add("sudo* rm*\n*mkfs.ext4*", "mkfs.ext4")
	f.Add("*rm -rf /*\n* x*\n*ab cd*", "  RM\t\t-RF  /\n AB\r\nCD x")
	f.Fuzz(func(t *testing.T, patterns, subject string) {
		var pats []Pattern
		for _, src := range splitLines(patterns, 16) {
			if p, err := CompilePattern(src); err == nil {
				pats = append(pats, p)
			}
		}
		ix := NewPatternIndex(pats)
		raw := subject
		subject = Normalize(subject)
		set := NewCandidates(ix.Len())
		ix.Always(set)
		ix.Mark(subject, set)
		// Marking the raw text while folding it finds at least what
		// marking the folded text finds (when the text is ASCII).
		folding := NewCandidates(ix.Len())
		ix.Always(folding)
		if ix.text.markFolding(raw, folding) {
			for i := range pats {
				if set.Has(i) && !folding.Has(i) {
					t.Fatalf("%q: %q is a candidate of the folded %q but not of the raw text", raw, pats[i].norm, subject)
				}
			}
		}
		cmds := NewCandidates(ix.Len())
		ix.MarkCommand(subject, cmds)
		for i, p := range pats {
			if p.MatchNormalized(subject) && !set.Has(i) {
				t.Fatalf("%q matches %q but is not a candidate", p.norm, subject)
			}
			if p.cmd != nil && p.cmd.Match(shellCommand(subject)) != 0 && !cmds.Has(i) {
				t.Fatalf("%q matches the command %q but is not a candidate", p.norm, subject)
			}
		}
	})
}

func splitLines(s string, limit int) []string {
	var out []string
	for len(out) < limit {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return out
}

// shellCommand is a command with only a name, as a parsed "name" is.
func shellCommand(name string) shell.Command { return shell.Command{Name: name} }

// Next must visit exactly the positions Has reports, in ascending order:
// the evaluator walks each list by Next and takes the first match, so a
// skipped or reordered position would change a decision.
func TestCandidatesNext(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		set  []int
	}{
		{"empty", 130, nil},
		{"first", 130, []int{0}},
		{"last of a word", 130, []int{63}},
		{"first of a word", 130, []int{64}},
		{"last", 130, []int{129}},
		{"across words", 200, []int{1, 63, 64, 65, 127, 128, 199}},
		{"gap of whole words", 1000, []int{3, 700, 999}},
		{"one word full", 64, func() []int {
			var all []int
			for i := range 64 {
				all = append(all, i)
			}
			return all
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCandidates(tc.n)
			for _, i := range tc.set {
				c.Add(i)
			}
			var got []int
			for i := c.Next(0); i >= 0; i = c.Next(i + 1) {
				got = append(got, i)
			}
			if !slices.Equal(got, tc.set) {
				t.Fatalf("walk by Next = %v, want %v", got, tc.set)
			}
			for i := -1; i <= tc.n+64; i++ {
				want := -1
				for j := max(i, 0); j < len(c)*64; j++ {
					if c.Has(j) {
						want = j
						break
					}
				}
				if got := c.Next(i); got != want {
					t.Fatalf("Next(%d) = %d, want %d", i, got, want)
				}
			}
		})
	}
}

func TestToolMemo(t *testing.T) {
	var m ToolMemo
	if _, ok := m.Load("op", "srv", "tool"); ok {
		t.Fatal("an empty memo has a tool")
	}
	if got := m.Store("op", "srv", "tool", 1); got != 1 {
		t.Fatalf("Store = %v", got)
	}
	if got := m.Store("op", "srv", "tool", 2); got != 1 {
		t.Errorf("a second Store of the same tool = %v, want the first value", got)
	}
	// The parts are kept apart: ("op", "srvtool", "") is another tool.
	if _, ok := m.Load("op", "srvtool", ""); ok {
		t.Error("the key's parts run together")
	}
	// Bounded: past maxMemoTools a value is used but not kept.
	var wg sync.WaitGroup
	for i := range maxMemoTools + 10 {
		wg.Go(func() {
			name := fmt.Sprint(i)
			m.Store(name, "s", "t", i)
			m.Load(name, "s", "t")
		})
	}
	wg.Wait()
	if n := len(*m.m.Load()); n != maxMemoTools {
		t.Errorf("memo holds %d tools, want the bound %d", n, maxMemoTools)
	}
	if v, ok := m.Load("op", "srv", "tool"); !ok || v != 1 {
		t.Errorf("Load = %v, %v after the memo filled", v, ok)
	}
}
