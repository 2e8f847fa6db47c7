package injection

import (
	"strings"
	"testing"
)

// seeds are the corpora and texts built to be costly: every fuzz target
// starts from them, and `go test` runs them.
func seeds() []string {
	var out []string
	for _, a := range attacks {
		out = append(out, a.text+a.tool)
	}
	out = append(out, honestTools...)
	out = append(out, honestData...)
	for _, s := range pathological(4 << 10) {
		out = append(out, s)
	}
	return out
}

// pathological are texts of about n bytes built to make a scanner work:
// phrase starts that never finish, tags that never close, a chunk full
// of placeholders, hidden runs, look-alike words, no spaces at all.
func pathological(n int) map[string]string {
	fill := func(unit string) string { return strings.Repeat(unit, n/len(unit)+1)[:n] }
	return map[string]string{
		"phrase starts":   fill("ignore the the all other your "),
		"comments":        fill("<!--"),
		"angles":          fill("< < <important <|x| [system **system "),
		"one word":        fill("a"),
		"addresses":       fill("a@b.cd x@corp.io "),
		"paths":           fill("~/.ssh/id_rsa /etc/passwd .env "),
		"url chunk":       fill("https://x.io/?a={content}&b=<data>&"),
		"zero width":      fill("a\u200b"),
		"tags":            fill("a" + string(rune(0xE0041))),
		"selectors":       fill("a\uFE00\uFE01"),
		"mixed script":    fill("pаge "),
		"escapes":         fill("\x1b[31m\x1b]8;;x\x07"),
		"spaces":          fill(" \n"),
		"identifiers":     fill("mcp_tool_send_email_a_b_c_d_e_f "),
		"pipes":           fill("curl | | | "),
		"camel and marks": fill("éÉ\u0301ǅ "),
	}
}

func FuzzScan(f *testing.F) {
	for _, s := range seeds() {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, text string, data bool) {
		for _, budget := range []int{0, 64} {
			fs := Scan(text, Options{Data: data, Budget: budget, OtherTools: defaultOthers, OwnTools: []string{"add"}})
			unscanned := false
			for _, f := range fs {
				checkSafe(t, f)
				unscanned = unscanned || f.Kind == Unscanned
			}
			if limit := max(budget, 0); budget > 0 && len(text) > limit && !unscanned {
				t.Errorf("%d bytes past a budget of %d, and no unscanned finding", len(text), budget)
			}
			if budget == 0 && len(text) <= DefaultBudget && unscanned {
				t.Errorf("unscanned within the budget: %v", fs)
			}
		}
	})
}

func FuzzScanToolJSON(f *testing.F) {
	for _, a := range attacks {
		if a.tool != "" {
			f.Add([]byte(a.tool))
		}
	}
	for _, h := range honestTools {
		f.Add([]byte(h))
	}
	f.Add([]byte(`{"inputSchema":` + strings.Repeat(`{"properties":{"a":`, 100) + `"x"` + strings.Repeat(`}}`, 100) + `}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		fs, err := ScanToolJSON(raw, Options{OtherTools: defaultOthers, Budget: 4096})
		if err != nil {
			return
		}
		for _, f := range fs {
			checkSafe(t, f)
			if len(f.Where) > 320 {
				t.Errorf("where of %d bytes", len(f.Where))
			}
		}
	})
}
