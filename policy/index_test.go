package policy

import (
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
	f.Fuzz(func(t *testing.T, patterns, subject string) {
		var pats []Pattern
		for _, src := range splitLines(patterns, 16) {
			if p, err := CompilePattern(src); err == nil {
				pats = append(pats, p)
			}
		}
		ix := NewPatternIndex(pats)
		subject = Normalize(subject)
		set := NewCandidates(ix.Len())
		ix.Always(set)
		ix.Mark(subject, set)
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
