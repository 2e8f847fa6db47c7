package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aqlguard/aqlguard/store"
)

// TestAuditListFits (issue 31, item 9): audit list fits 100 columns
// (a pin record's hash, a long operation name and a challenge id once
// made lines of 232), and a server's run of pin records is one line
// unless --pins; --wide prints every value whole.
func TestAuditListFits(t *testing.T) {
	at := time.Date(2026, 11, 29, 9, 30, 0, 0, time.UTC)
	var recs []store.Record
	seq := uint64(0)
	add := func(r store.Record) {
		seq++
		r.Seq, r.Time = seq, at.Add(time.Duration(seq)*time.Second)
		recs = append(recs, r)
	}
	for _, tool := range []string{"read_file", "write_file", "edit_file", "list_directory", "move_file", "search_files", "directory_tree", "get_file_info"} {
		add(store.Record{Kind: "pin", Principal: "claude-desktop", Server: "filesystem", Operation: "pin filesystem." + tool,
			Result: "pinned at first sight (shipped profile)", Decision: strings.Repeat("ab12", 16)})
	}
	add(store.Record{Kind: "decision", Principal: "claude-desktop", Server: "sequentialthinking", Tool: "sequentialthinking_tools_with_a_long_name",
		Operation: "sequentialthinking_sequentialthinking_tools_with_a_long_name", Decision: "verify", Result: "blocked",
		ChallengeID: "ch_01JDXKQ7R8Y6W5V4T3S2R1Q0P9N8M7"})
	add(store.Record{Kind: "outcome", Principal: "claude-desktop", Server: "fetch", Tool: "fetch", Result: "success",
		Findings: []store.Finding{{Kind: "secret", Rule: "aws-access-token"}, {Kind: "injection", Rule: "override"}}})

	for _, tt := range []struct {
		name       string
		pins, wide bool
		lines      int
	}{
		{"default", false, false, 1 + 1 + 2 + 1},
		{"--pins", true, false, 1 + 8 + 2},
		{"--wide", false, true, 1 + 1 + 2 + 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			rows := listRows(recs, tt.pins, tt.wide)
			printListRows(&b, rows, tt.wide)
			if folded := len(recs) - len(rows); folded > 0 {
				b.WriteString("(folded)\n")
			}
			out := b.String()
			t.Logf("\n%s", out)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != tt.lines {
				t.Errorf("%d lines, want %d", len(lines), tt.lines)
			}
			widest := 0
			for _, l := range lines {
				widest = max(widest, utf8.RuneCountInString(l))
			}
			if !tt.wide && widest > listWidth {
				t.Errorf("a line of %d columns", widest)
			}
			if tt.wide && !strings.Contains(out, "ch_01JDXKQ7R8Y6W5V4T3S2R1Q0P9N8M7") {
				t.Error("--wide cut a value")
			}
			if strings.Contains(out, strings.Repeat("ab12", 16)) {
				t.Error("a pin's hash is listed")
			}
			if !tt.pins && !strings.Contains(out, "pin ×8") {
				t.Error("the pins are not folded")
			}
		})
	}
}
