// Package suggest proposes policy rules from the human's answers in the
// audit log (aqlguard policy suggest): calls a human allowed again and
// again become an auto_approve rule, calls a human denied a refuse rule,
// each with its evidence, as an edit of the user's configuration the
// person may save, and as policy test cases that keep it checked.
//
// A suggestion never widens past what a human allowed, and never rests
// on what the policy cannot judge soundly:
//
//   - It is an argument rule on the one argument that says what a call
//     does (a command line, code, a query, a path or a URL: the highest
//     of those roles every call of the tool carries), and its pattern is
//     the values the human answered, each escaped, nothing more. An
//     auto_approve argument rule approves only when every value under
//     the argument matches, and a shell line only when it resolves
//     statically, command by command: "git status; rm -rf /" is not
//     "git status". An auto_approve text pattern, which approves no tool
//     call, is never suggested, nor a tool approved by its name alone.
//   - A value is suggested only after --min answers that all agree
//     (denials: --min among all the values refused together, since a
//     refusal lets nothing more through), and an approval only for a
//     value already in the folded form patterns match (lower case, one
//     space), so that folding approves no other spelling.
//   - It goes under [agents.<principal>]: the answers were that
//     principal's.
//   - It is checked before it is shown: the edited configuration is
//     compiled (under the managed policy, whose rules it never touches
//     and whose locks it respects) and every answered call it covers is
//     evaluated again; a suggestion that would not decide those calls as
//     the human did (a managed rule, a requires_approval, a line the
//     guard cannot resolve asks first), or that would let a denied call
//     through, is dropped and the report says why.
package suggest

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/evaluator/policytest"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aymanbagabas/go-udiff"
)

// Options shape the suggestions.
type Options struct {
	// Since and Until bound the answers read (zero: all).
	Since, Until time.Time
	// Agent keeps the answers of one principal ("": every one).
	Agent string
	// Min is how many agreeing answers a value needs (default 3).
	Min int
	// Managed is the managed policy layer the configuration is laid over
	// (nil: none).
	Managed *config.Config
	// Now dates the suggestions' comments.
	Now time.Time
}

// Answer is one question a human answered: the call asked about and what
// the human said.
type Answer struct {
	Principal, Server, Tool, Operation string
	Arguments                          map[string]any
	Said                               string // allowed, allowed_session, denied
	Seq                                uint64 // the answer's record
	Asked                              uint64 // the decision record that asked
	Layer                              string // the layer whose rule asked
	Stage                              string
}

// Evidence is what the human said about one value of the argument.
type Evidence struct {
	Value                           string
	Allowed, AllowedSession, Denied int
	Seqs                            []uint64 // the answers' records
	answers                         []Answer
}

// Suggestion is one proposed rule.
type Suggestion struct {
	Principal, Server, Tool, Argument string
	Role                              policy.Role
	Action                            policy.Action
	Evidence                          []Evidence
	Rule                              config.ArgRule
	// Source is the rule as decisions name it (policy test's rule).
	Source string
}

// Result is what Suggest proposes.
type Result struct {
	Suggestions []Suggestion
	// Notes say what was answered but not suggested, and why.
	Notes []string
	// Before and After are the user's configuration as it is and with
	// the suggestions; Diff is the change as a unified diff.
	Before, After string
	Diff          string
	// Cases are policy test cases of every answered call the suggestions
	// decide, which pass against After.
	Cases []policytest.Case
	// Answers is how many answers were read.
	Answers int
}

// Answers pairs each human answer in records with the decision that
// asked the question (by its confirmation token): the answers to
// questions about a tool call, not the check-ins of the step limit or a
// reported failure.
func Answers(records []store.Record, o Options) []Answer {
	// The decision that asked is written after the answer when the human
	// answers while the call waits (it records what became of the call),
	// before it when the call returned first: a token's first decision
	// either way.
	asked := map[string]store.Record{}
	for _, r := range records {
		if r.Kind == "decision" && r.Token != "" && r.Server != "" {
			if _, ok := asked[r.Token]; !ok {
				asked[r.Token] = r
			}
		}
	}
	var out []Answer
	for _, r := range records {
		switch {
		case r.Kind == "confirmation" && r.Token != "":
			said := map[string]string{"approved": "allowed", "approved_for_session": "allowed_session", "denied": "denied"}[r.Decision]
			q, ok := asked[r.Token]
			if said == "" || !ok || !o.Since.IsZero() && r.Time.Before(o.Since) || !o.Until.IsZero() && !r.Time.Before(o.Until) {
				continue
			}
			if o.Agent != "" && q.Principal != o.Agent {
				continue
			}
			if q.Stage == string(evaluator.StageStepLimit) || q.Stage == string(evaluator.StageOutcome) {
				continue
			}
			a := Answer{Principal: q.Principal, Server: q.Server, Tool: q.Tool, Operation: q.Operation, Said: said,
				Seq: r.Seq, Asked: q.Seq, Layer: q.Layer, Stage: q.Stage}
			if a.Tool == "" { // records from before tools were named: the operation says it
				a.Tool = strings.TrimPrefix(q.Operation, q.Server+"_")
			}
			if len(q.Args) > 0 {
				if err := json.Unmarshal(q.Args, &a.Arguments); err != nil {
					continue
				}
			} else if q.ArgsText != "" {
				continue // cut short in the record: the call cannot be judged again
			}
			out = append(out, a)
		}
	}
	return out
}

// rolesRank orders the roles that say what a call does: what runs
// first, then where.
var rolesRank = []policy.Role{policy.RoleCommand, policy.RoleCode, policy.RoleQuery, policy.RolePath, policy.RoleURL}

// Suggest proposes rules from answers, as an edit of cfg's file (its
// text before). cfg is the user's configuration as loaded (no managed
// layer laid over it: o.Managed is).
func Suggest(cfg *config.Config, before string, answers []Answer, o Options) (*Result, error) {
	if o.Min <= 0 {
		o.Min = 3
	}
	res := &Result{Before: before, After: before, Answers: len(answers)}
	type key struct{ principal, server, tool string }
	groups := map[key][]Answer{}
	for _, a := range answers {
		k := key{a.Principal, a.Server, a.Tool}
		groups[k] = append(groups[k], a)
	}
	keys := slices.SortedFunc(maps.Keys(groups), func(a, b key) int {
		return strings.Compare(a.principal+"\x00"+a.server+"\x00"+a.tool, b.principal+"\x00"+b.server+"\x00"+b.tool)
	})
	current, err := effective(cfg, o.Managed)
	if err != nil {
		return nil, err
	}
	var candidates []Suggestion
	for _, k := range keys {
		sug, notes := propose(current, groups[k], o.Min)
		res.Notes = append(res.Notes, notes...)
		candidates = append(candidates, sug...)
	}
	// Each candidate is checked on its own first (one that fails with
	// several values, value by value), then all together.
	var kept []Suggestion
	for _, s := range candidates {
		why := check(cfg, before, []Suggestion{s}, o, answers)
		if why == "" {
			kept = append(kept, s)
			continue
		}
		if len(s.Evidence) == 1 {
			res.Notes = append(res.Notes, fmt.Sprintf("%s.%s %s %q: not suggested: %s", s.Server, s.Tool, s.Argument, s.Evidence[0].Value, why))
			continue
		}
		var good []Evidence
		for _, e := range s.Evidence {
			one := withEvidence(s, []Evidence{e})
			if why := check(cfg, before, []Suggestion{one}, o, answers); why != "" {
				res.Notes = append(res.Notes, fmt.Sprintf("%s.%s %s %q: not suggested: %s", s.Server, s.Tool, s.Argument, e.Value, why))
				continue
			}
			good = append(good, e)
		}
		if len(good) > 0 {
			kept = append(kept, withEvidence(s, good))
		}
	}
	if len(kept) > 0 {
		if why := check(cfg, before, kept, o, answers); why != "" {
			return nil, fmt.Errorf("the suggestions together: %s", why) // each held alone: cannot happen
		}
	}
	res.Suggestions = kept
	res.After = edit(before, kept, o)
	res.Cases = cases(kept)
	if res.After != before {
		res.Diff = udiff.Unified("a/"+displayName(cfg), "b/"+displayName(cfg), before, res.After)
	}
	return res, nil
}

func displayName(cfg *config.Config) string {
	if cfg.Path == "" {
		return "config.toml"
	}
	return strings.TrimPrefix(cfg.Path, "/")
}

// effective is cfg as it is in force: laid over the managed layer.
func effective(cfg *config.Config, managed *config.Config) (*config.Config, error) {
	if managed == nil {
		return cfg, nil
	}
	eff, _ := policy.Overlay(managed, cfg)
	return eff, nil
}

// propose finds, for one tool of one principal, the argument that says
// what its calls do and the values the human answered alike, at least
// min times each.
func propose(cfg *config.Config, answers []Answer, min int) ([]Suggestion, []string) {
	a0 := answers[0]
	name := a0.Server + "." + a0.Tool
	if a0.Principal != "" {
		name = a0.Principal + ": " + name
	}
	pol, err := policy.Compile(cfg, a0.Principal)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: the policy for %s does not compile: %v", name, a0.Principal, err)}
	}
	// The decisive argument: the highest role every call carries, as a
	// string at the top level.
	var arg string
	var role policy.Role
	for _, r := range rolesRank {
		candidate := ""
		for i, a := range answers {
			got := ""
			for _, v := range evaluator.SubjectsOf(pol, step(a)).Values {
				if !v.Key && v.String && !v.Derived && v.Role == r && !strings.Contains(v.Path, ".") {
					got = v.Path
					break
				}
			}
			if got == "" || i > 0 && got != candidate {
				candidate = ""
				break
			}
			candidate = got
		}
		if candidate != "" {
			arg, role = candidate, r
			break
		}
	}
	if arg == "" {
		allowed, denied := 0, 0
		for _, a := range answers {
			if a.Said == "denied" {
				denied++
			} else {
				allowed++
			}
		}
		return nil, []string{fmt.Sprintf("%s: %d allowed, %d denied; no argument says what its calls do (a command, code, "+
			"a query, a path or a URL in every call), so no rule would stop at what the human saw: nothing suggested "+
			"(a rule on the tool's name would approve whatever arguments it is given)", name, allowed, denied)}
	}
	byValue := map[string]*Evidence{}
	for _, a := range answers {
		v, _ := valueAt(a.Arguments, arg)
		e := byValue[v]
		if e == nil {
			e = &Evidence{Value: v}
			byValue[v] = e
		}
		switch a.Said {
		case "allowed":
			e.Allowed++
		case "allowed_session":
			e.AllowedSession++
		case "denied":
			e.Denied++
		}
		e.Seqs = append(e.Seqs, a.Seq)
		e.answers = append(e.answers, a)
	}
	// An approval needs min answers for each value it approves; a
	// refusal, which never lets more through, needs min denials among
	// all its values (the guard does not ask again about a call a human
	// just denied, so the same line is rarely denied min times).
	var allow, deny []Evidence
	var notes []string
	denials := 0
	for _, v := range slices.Sorted(maps.Keys(byValue)) {
		e := *byValue[v]
		yes := e.Allowed + e.AllowedSession
		switch {
		case yes > 0 && e.Denied > 0:
			notes = append(notes, fmt.Sprintf("%s %s %q: allowed %d, denied %d: the human did not answer alike; it keeps asking", name, arg, v, yes, e.Denied))
		case yes >= min && policy.Normalize(v) != v:
			// Patterns match folded text (case, width, white space): a
			// rule for this spelling would approve others the human never
			// saw ("/tmp/A" is not "/tmp/a").
			notes = append(notes, fmt.Sprintf("%s %s %q: allowed %d time(s), but a rule matches text folded (case, width, "+
				"white space), so it would approve spellings the human never saw: nothing suggested", name, arg, v, yes))
		case yes >= min:
			allow = append(allow, e)
		case e.Denied > 0:
			deny = append(deny, e)
			denials += e.Denied
		default:
			notes = append(notes, fmt.Sprintf("%s %s %q: allowed %d time(s), fewer than --min %d", name, arg, v, yes, min))
		}
	}
	if denials > 0 && denials < min {
		for _, e := range deny {
			notes = append(notes, fmt.Sprintf("%s %s %q: denied %d time(s); %d denial(s) of the tool's calls in all, fewer than --min %d", name, arg, e.Value, e.Denied, denials, min))
		}
		deny = nil
	}
	var out []Suggestion
	for _, set := range []struct {
		ev     []Evidence
		action policy.Action
	}{{allow, policy.ActionAutoApprove}, {deny, policy.ActionRefuse}} {
		if len(set.ev) == 0 {
			continue
		}
		s := Suggestion{Principal: a0.Principal, Server: a0.Server, Tool: a0.Tool, Argument: arg, Role: role, Action: set.action}
		out = append(out, withEvidence(s, set.ev))
	}
	return out, notes
}

// withEvidence is s for these values: its rule matches them alone.
func withEvidence(s Suggestion, ev []Evidence) Suggestion {
	s.Evidence = ev
	vals := make([]string, len(ev))
	for i, e := range ev {
		vals[i] = escape(e.Value)
	}
	pattern := vals[0]
	if len(vals) > 1 {
		pattern = "{" + strings.Join(vals, ",") + "}"
	}
	s.Rule = config.ArgRule{Action: string(s.Action), Operation: s.Server + "." + globEscape(s.Tool), Argument: s.Argument, Pattern: pattern}
	s.Source = "operation~" + strconv.Quote(s.Rule.Operation) + " " + s.Argument + "~" + strconv.Quote(pattern)
	return s
}

// valueAt is the string value of a top-level argument (in its SnakeName
// form, as subjects name it).
func valueAt(args map[string]any, snake string) (string, bool) {
	for k, v := range args {
		if policy.SnakeName(k) == snake {
			s, ok := v.(string)
			return s, ok
		}
	}
	return "", false
}

// escape makes a value a glob that matches it alone: every character
// the glob syntax gives a meaning quoted (the comma too, which would
// split an alternative).
func escape(v string) string { return globEscape(v) }

func globEscape(v string) string {
	var b strings.Builder
	for _, r := range v {
		if strings.ContainsRune(`\*?[]{}!,^`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// step is the call an answer was about, as policy test judges it.
func step(a Answer) evaluator.Step {
	return evaluator.Step{Principal: a.Principal, StepNumber: 1, Server: a.Server, Tool: a.Tool,
		Operation: a.Server + "_" + policy.SnakeName(a.Tool), Arguments: a.Arguments}
}
