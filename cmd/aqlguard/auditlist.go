package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aqlguard/aqlguard/audit"
	"github.com/aqlguard/aqlguard/store"
)

// listWidth is what `audit list` fits by default: a terminal of 100
// columns. --wide prints every column whole.
const listWidth = 100

// listRow is one line of `audit list`: a record, or a run of pin records
// folded into one.
type listRow struct {
	seq, time, agent, what, call, result string
}

// auditList prints the last n records that match f, one line each.
// A run of pin records (a server's tools pinned at first sight, one
// record each) is one line unless eachPin (--pins, or --kind pin).
func auditList(ctx context.Context, st store.State, n int, f audit.Filter, eachPin, wide bool, w io.Writer) error {
	ring := make([]store.Record, 0, n)
	err := eachRecord(st, 0, func(r store.Record, _ []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !f.Match(r) {
			return nil
		}
		if len(ring) == n {
			ring = ring[1:]
		}
		ring = append(ring, r)
		return nil
	})
	if err != nil {
		return err
	}
	rows := listRows(ring, eachPin, wide)
	printListRows(w, rows, wide)
	if folded := len(ring) - len(rows); folded > 0 && !eachPin {
		fmt.Fprintf(w, "(%d pin records folded into their server's line: --pins lists each)\n", folded)
	}
	return nil
}

// listRows are recs as lines, runs of pin records of one server folded
// unless eachPin.
func listRows(recs []store.Record, eachPin, wide bool) []listRow {
	var rows []listRow
	for i := 0; i < len(recs); {
		r := recs[i]
		j := i + 1
		if r.Kind == string(store.KindPin) && !eachPin {
			for j < len(recs) && recs[j].Kind == r.Kind && recs[j].Server == r.Server && recs[j].Principal == r.Principal {
				j++
			}
		}
		if j-i == 1 {
			rows = append(rows, listRowOf(r, wide))
			i++
			continue
		}
		var results []string
		for _, p := range recs[i:j] {
			if !slices.Contains(results, p.Result) {
				results = append(results, p.Result)
			}
		}
		rows = append(rows, listRow{seq: fmt.Sprintf("%d-%d", r.Seq, recs[j-1].Seq), time: listTime(r.Time, wide), agent: r.Principal,
			what: fmt.Sprintf("pin ×%d", j-i), call: r.Server + " (" + fmt.Sprint(j-i) + " tools)", result: strings.Join(results, "; ")})
		i = j
	}
	return rows
}

// listRowOf is one record's line: a decision by what was decided,
// another record by its kind; the call as server.tool; the result with
// what it held and the challenge a code was shown for.
func listRowOf(r store.Record, wide bool) listRow {
	what := r.Kind
	if r.Kind == string(store.KindDecision) && r.Decision != "" {
		what = r.Decision
	}
	call := r.Operation
	if r.Server != "" && r.Tool != "" {
		call = r.Server + "." + r.Tool
	}
	result := r.Result
	if len(r.Findings) > 0 {
		result += " (" + findingsLine(r.Findings) + ")"
	}
	if r.ChallengeID != "" {
		result = strings.TrimSpace(result + " challenge " + r.ChallengeID)
	}
	return listRow{seq: fmt.Sprint(r.Seq), time: listTime(r.Time, wide), agent: r.Principal, what: what, call: call, result: oneLine(result)}
}

// listTime is a record's local time: month, day and time of day (the
// year and zone with --wide).
func listTime(t time.Time, wide bool) string {
	if wide {
		return t.Local().Format(time.RFC3339)
	}
	return t.Local().Format("01-02 15:04:05")
}

// printListRows prints rows as columns. Unless wide, the agent, what and
// call columns are capped and the result takes what is left of
// listWidth; a value cut short ends in "…" (audit show SEQ has it whole).
func printListRows(w io.Writer, rows []listRow, wide bool) {
	head := listRow{"SEQ", "TIME", "AGENT", "WHAT", "CALL", "RESULT"}
	cols := func(r listRow) []string { return []string{r.seq, r.time, r.agent, r.what, r.call, r.result} }
	caps := []int{0, 0, 16, 14, 30, 0} // 0: no cap
	widths := make([]int, 6)
	for _, r := range append([]listRow{head}, rows...) {
		for i, c := range cols(r) {
			n := utf8.RuneCountInString(c)
			if !wide && caps[i] > 0 {
				n = min(n, caps[i])
			}
			widths[i] = max(widths[i], n)
		}
	}
	if !wide {
		used := 2 * 5 // the gaps
		for _, n := range widths[:5] {
			used += n
		}
		widths[5] = max(listWidth-used, 12)
	}
	var b strings.Builder
	for _, r := range append([]listRow{head}, rows...) {
		b.Reset()
		for i, c := range cols(r) {
			if !wide {
				c = cut(c, widths[i])
			}
			if i == 5 {
				b.WriteString(c)
				break
			}
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// cut shortens s to n runes, the last one "…" when it was longer.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
