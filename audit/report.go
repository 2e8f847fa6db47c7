package audit

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aqlguard/aqlguard/store"
)

// A report is one self-contained HTML file for a reviewer: what happened
// in a period, at a glance (a timeline of calls by decision) and in
// detail (the calls that were stopped or asked about, with their
// arguments as the log stores them, the human's answers, verification
// codes, policy switches and tool definition changes), and whether the
// log's hash chain verifies. Everything is in the file: styles, the
// chart (inline SVG) and the few lines of script that filter by agent,
// server and tool. It loads nothing, so it can be mailed, archived and
// opened offline.

//go:embed report.html.tmpl
var reportTemplate string

// Chain is what a report says about the log's hash chain.
type Chain struct {
	// Verified: every record links and hashes; Records is how many.
	Verified bool
	Records  uint64
	// Problem says what is wrong when it does not verify.
	Problem string
}

// ReportOptions describe a report: the period it covers (zero: from the
// first record, to Generated), when and by what it was made, the state
// directory it reads, and the chain's status.
type ReportOptions struct {
	Since, Until time.Time
	Generated    time.Time
	Version      string
	StateID      string
	Chain        Chain
}

// Decision classes, in the order the timeline stacks them.
var classes = []struct {
	Name, Label, Color string
}{
	{"allowed", "allowed", "#2ec27e"},
	{"asked", "asked a person", "#e5a50a"},
	{"paused", "paused for a code", "#9141ac"},
	{"blocked", "blocked the agent", "#c01c28"},
	{"refused", "refused or denied", "#865e3c"},
}

// classOf puts a decision record in a class.
func classOf(r store.Record) string {
	switch r.Decision {
	case "allow":
		return "allowed"
	case "confirm", "ask_client":
		return "asked"
	case "verify":
		return "paused"
	case "block":
		return "blocked"
	}
	return "refused"
}

// maxArgText bounds the arguments a report shows per call; the rest is
// counted, and aqlguard audit show SEQ has it.
const maxArgText = 4096

type row struct {
	Seq                  uint64
	Time                 string
	Agent, Server, Tool  string
	Class, What, Detail  string
	Tier                 string
	Risk                 int
	Args                 string
	ArgsNote             string
	Bucket               int
	Factors              []string
	Session, ChallengeID string
	// Why says in words why a call was stopped or put to a person (the
	// stage that decided); Factors are the evaluator's own lines under
	// it. Then says what became of it: the person's answer and whether
	// the call ran (thenOf).
	Why, Then string
}

type bar struct {
	Bucket       int
	Class, Color string
	X, Y, W, H   float64
	Count        int
	Label        string
}

type reportView struct {
	Title, Generated, From, To, Version, StateID string
	Chain                                        Chain
	Agents, Servers, Tools                       []string
	Classes                                      []struct{ Name, Label, Color string }
	Colors                                       map[string]string
	Counts                                       map[string]int
	Decisions                                    int
	Calls, Answers, Codes, Policies, Pins, Other []row
	Bars                                         []bar
	Ticks                                        []struct {
		X     float64
		Label string
	}
	Chart     chartGeometry
	YMax      int
	CallsData []callPoint
	// PinsFirstSeen counts tools pinned the first time they were seen
	// (not a change; listed as a number).
	PinsFirstSeen int
}

// chartGeometry is the timeline's layout, shared with the page's script.
type chartGeometry struct {
	Width, Height, Left, Bottom float64
	Buckets                     int
	BucketSeconds               int64
	Start                       int64
	Classes                     []string
}

// callPoint is one decision, for the script that redraws the timeline
// for the chosen agent, server and tool.
type callPoint struct {
	B int    `json:"b"`
	C string `json:"c"`
	A string `json:"a"`
	S string `json:"s"`
	T string `json:"t"`
}

// bucketSizes are the timeline's possible bucket widths: the smallest
// that keeps a period within 48 bars.
var bucketSizes = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 3 * time.Hour,
	6 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}

// WriteReport writes the report of recs (the records of the period, in
// log order) to w.
func WriteReport(w io.Writer, recs []store.Record, o ReportOptions) error {
	from, to := o.Since, o.Until
	if to.IsZero() {
		to = o.Generated
	}
	if from.IsZero() {
		from = to.Add(-24 * time.Hour)
		if len(recs) > 0 && recs[0].Time.Before(from) {
			from = recs[0].Time
		}
	}
	size := bucketSizes[len(bucketSizes)-1]
	for _, s := range bucketSizes {
		if to.Sub(from) <= 48*s {
			size = s
			break
		}
	}
	start := from.Truncate(size)
	n := int(to.Sub(start)/size) + 1

	v := reportView{Title: "aqlguard audit report", Generated: stamp(o.Generated), From: stamp(from), To: stamp(to),
		Version: o.Version, StateID: o.StateID, Chain: o.Chain, Counts: map[string]int{}}
	v.Colors = map[string]string{}
	for _, c := range classes {
		v.Classes = append(v.Classes, c)
		v.Colors[c.Name] = c.Color
	}
	agents, servers, tools := set{}, set{}, set{}
	counts := make([]map[string]int, n)
	for i := range counts {
		counts[i] = map[string]int{}
	}
	after := indexAfter(recs)
	for _, r := range recs {
		b := int(r.Time.Sub(start) / size)
		if b < 0 {
			b = 0
		} else if b >= n {
			b = n - 1
		}
		x := rowOf(r, b)
		agents.add(x.Agent)
		servers.add(x.Server)
		tools.add(x.Tool)
		switch r.Kind {
		case "decision":
			c := classOf(r)
			v.Counts[c]++
			v.Decisions++
			counts[b][c]++
			v.CallsData = append(v.CallsData, callPoint{B: b, C: c, A: x.Agent, S: x.Server, T: x.Tool})
			if c != "allowed" {
				x.Why = whyOf(r)
				x.Then = after.thenOf(r)
				v.Calls = append(v.Calls, x)
			}
		case "confirmation":
			v.Answers = append(v.Answers, x)
		case "challenge", "verification":
			v.Codes = append(v.Codes, x)
		case "policy":
			v.Policies = append(v.Policies, x)
		case "pin":
			if r.Result == "pinned at first sight" {
				v.PinsFirstSeen++
			} else {
				v.Pins = append(v.Pins, x)
			}
		case "outcome":
			// What the allowed calls did is in the log; the report counts
			// decisions, and shows what a result held (issue 30's
			// findings: a secret, instructions aimed at the assistant).
			if len(r.Findings) > 0 {
				x.What = "result held:"
				x.Factors = nil
				for _, f := range r.Findings {
					x.Factors = append(x.Factors, strings.TrimSpace(f.Kind+" "+f.Rule+" at "+f.Where))
				}
				v.Other = append(v.Other, x)
			}
		default:
			v.Other = append(v.Other, x)
		}
	}
	v.Agents, v.Servers, v.Tools = agents.sorted(), servers.sorted(), tools.sorted()
	v.Chart = chartGeometry{Width: 960, Height: 220, Left: 44, Bottom: 24, Buckets: n,
		BucketSeconds: int64(size / time.Second), Start: start.Unix()}
	for _, c := range classes {
		v.Chart.Classes = append(v.Chart.Classes, c.Name)
	}
	v.YMax = layoutBars(&v, counts, start, size)
	var buf bytes.Buffer
	t, err := template.New("report").Funcs(template.FuncMap{
		"join": strings.Join,
		"pct": func(a, b int) string {
			if b == 0 {
				return "0"
			}
			return fmt.Sprintf("%.0f", 100*float64(a)/float64(b))
		},
	}).Parse(reportTemplate)
	if err != nil {
		return err
	}
	if err := t.Execute(&buf, v); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// layoutBars places the timeline's stacked bars and its time ticks, and
// returns the largest bucket's count.
func layoutBars(v *reportView, counts []map[string]int, start time.Time, size time.Duration) int {
	g := v.Chart
	ymax := 1
	for _, c := range counts {
		total := 0
		for _, k := range c {
			total += k
		}
		ymax = max(ymax, total)
	}
	plotW, plotH := g.Width-g.Left-8, g.Height-g.Bottom-8
	bw := plotW / float64(g.Buckets)
	for b, c := range counts {
		y := 8 + plotH
		for _, cl := range classes {
			h := plotH * float64(c[cl.Name]) / float64(ymax)
			y -= h
			at := start.Add(time.Duration(b) * size)
			v.Bars = append(v.Bars, bar{Bucket: b, Class: cl.Name, Color: cl.Color, X: g.Left + float64(b)*bw + 1,
				Y: y, W: max(bw-2, 1), H: h, Count: c[cl.Name],
				Label: fmt.Sprintf("%s: %d %s", at.Local().Format("Jan 2 15:04"), c[cl.Name], cl.Label)})
		}
	}
	every := max(1, g.Buckets/8)
	for b := 0; b < g.Buckets; b += every {
		at := start.Add(time.Duration(b) * size).Local()
		label := at.Format("15:04")
		if size >= 24*time.Hour || b == 0 {
			label = at.Format("Jan 2 15:04")
		}
		v.Ticks = append(v.Ticks, struct {
			X     float64
			Label string
		}{g.Left + float64(b)*bw, label})
	}
	return ymax
}

// rowOf is a record as a report's table row.
func rowOf(r store.Record, bucket int) row {
	x := row{Seq: r.Seq, Time: r.Time.Local().Format("2006-01-02 15:04:05"), Agent: r.Principal, Server: r.Server,
		Tool: r.Operation, Tier: r.Tier, Risk: r.Risk, Bucket: bucket, Factors: r.Factors, Session: r.Session,
		ChallengeID: r.ChallengeID}
	if r.Kind == "decision" {
		x.Class = classOf(r)
	}
	x.What = r.Decision
	x.Detail = r.Result
	x.Factors = decisive(r)
	switch {
	case len(r.Args) > 0:
		x.Args = pretty(r.Args)
	case r.ArgsText != "":
		x.Args = r.ArgsText
		x.ArgsNote = fmt.Sprintf("the first %d of %d bytes, as the log keeps them", len(r.ArgsText), r.ArgsBytes)
	case r.Preview != "":
		x.Args = r.Preview
	}
	if n := utf8.RuneCountInString(x.Args); n > maxArgText {
		cut := []rune(x.Args)[:maxArgText]
		x.Args = string(cut)
		x.ArgsNote = fmt.Sprintf("%d more characters not shown: aqlguard audit show %d", n-maxArgText, r.Seq)
	}
	if r.Kind == "pin" {
		x.What = strings.TrimPrefix(r.Operation, "pin ")
		x.Tool = x.What
		x.Detail = r.Result
	}
	return x
}

// pretty indents JSON, with "<", ">" and "&" as they are (the log
// stores them escaped).
func pretty(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// decisive are the factors of a record that say why, without the lines
// every decision carries (its step count, an unreported outcome) unless
// those stages decided.
func decisive(r store.Record) []string {
	var out []string
	for _, f := range r.Factors {
		switch {
		case strings.HasPrefix(f, "step limit: step ") && r.Stage != "step_limit" && !strings.Contains(f, "exceeds"),
			f == "previous outcome: not reported":
			continue
		}
		out = append(out, f)
	}
	return out
}

// whyOf is the headline of a stopped or asked-about call's "Why": the
// stage of the evaluator that decided, in words (the factors follow it).
func whyOf(r store.Record) string {
	risk := ""
	if r.Risk > 0 {
		risk = fmt.Sprintf(" (risk %d of 100)", r.Risk)
	}
	switch r.Stage {
	case "pattern":
		return "a rule of the policy names this call" + patternOf(r.Factors)
	case "safety_tier":
		return "what the call does" + risk + " is in the " + r.Tier + " tier, which a person decides"
	case "risk_tolerance":
		return "its risk" + risk + " is above what the agent may do without a person"
	case "step_limit":
		return "the agent used up the steps it may take without a person"
	case "previous_outcome":
		return "the call before it failed, and the agent was paused until a person looked"
	}
	switch r.Result {
	case "":
	case "PERMISSION_AGENT_BLOCKED":
		return "the agent was already blocked: every call is refused until a person types the code"
	default:
		return "refused before the evaluator decided: " + strings.ToLower(strings.ReplaceAll(r.Result, "_", " "))
	}
	return ""
}

// patternOf is the rule a pattern-stage factor names (`pattern: deny
// "*drop_database*" matched …`), as ` ("*drop_database*", deny)`.
func patternOf(factors []string) string {
	for _, f := range factors {
		rest, ok := strings.CutPrefix(f, "pattern: ")
		if !ok {
			continue
		}
		action, rest, _ := strings.Cut(rest, " ")
		if q := strings.Index(rest, `"`); q >= 0 {
			if end := strings.Index(rest[q+1:], `"`); end >= 0 {
				return " (" + rest[q:q+end+2] + ", " + action + ")"
			}
		}
	}
	return ""
}

// laterRecords finds, for a stopped or asked-about call, what came of it
// later in the period: the person's answer to its question (the
// confirmation record with its token) and the call's outcome (the
// first outcome of the same session, operation and arguments after it).
type laterRecords struct {
	answers  map[string]store.Record // by token: the last answer
	outcomes map[string][]store.Record
}

func outcomeKey(r store.Record) string {
	return r.Principal + "\x00" + r.Session + "\x00" + r.Operation + "\x00" + r.ArgsSHA256
}

func indexAfter(recs []store.Record) laterRecords {
	l := laterRecords{answers: map[string]store.Record{}, outcomes: map[string][]store.Record{}}
	for _, r := range recs {
		switch r.Kind {
		case "confirmation":
			if r.Token != "" {
				l.answers[r.Token] = r
			}
		case "outcome":
			if r.ArgsSHA256 != "" {
				k := outcomeKey(r)
				l.outcomes[k] = append(l.outcomes[k], r)
			}
		}
	}
	return l
}

// thenOf says what became of the decision r: "the person answered
// approved at 17:04; the call ran: ok", "no answer in this period; the
// call did not run", or nothing for a call nobody was asked about and
// that did not run.
func (l laterRecords) thenOf(r store.Record) string {
	var said []string
	approved := false
	if r.Token != "" {
		a, ok := l.answers[r.Token]
		switch {
		case !ok:
			said = append(said, "no answer in this period")
		case a.Decision == "no_answer":
			said = append(said, "nobody answered (#"+fmt.Sprint(a.Seq)+"); the call did not run")
			return strings.Join(said, "; ")
		default:
			said = append(said, "the person answered "+strings.ReplaceAll(a.Decision, "_", " ")+" at "+a.Time.Local().Format("15:04:05")+" (#"+fmt.Sprint(a.Seq)+")")
			if approved = strings.HasPrefix(a.Decision, "approved"); !approved {
				return strings.Join(append(said, "the call did not run"), "; ")
			}
		}
	}
	if r.ArgsSHA256 != "" {
		for _, o := range l.outcomes[outcomeKey(r)] {
			if o.Seq > r.Seq {
				said = append(said, "the call ran: "+o.Result+" (#"+fmt.Sprint(o.Seq)+")")
				return strings.Join(said, "; ")
			}
		}
	}
	switch {
	case classOf(r) != "asked":
		said = append(said, "the call did not run")
	case len(said) > 0:
		said = append(said, "no outcome in this period")
	}
	return strings.Join(said, "; ")
}

func stamp(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05 MST") }

type set map[string]bool

func (s set) add(v string) {
	if v != "" {
		s[v] = true
	}
}

func (s set) sorted() []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
