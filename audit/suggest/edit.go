package suggest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/evaluator/policytest"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/pelletier/go-toml/v2"
)

// edit is the configuration's text with the suggestions appended, each
// an [[agents.<principal>.rules]] entry after a comment giving its
// evidence. Appending leaves every line of the file as it was.
func edit(before string, sugs []Suggestion, o Options) string {
	if len(sugs) == 0 {
		return before
	}
	var b strings.Builder
	b.WriteString(before)
	if before != "" && !strings.HasSuffix(before, "\n") {
		b.WriteByte('\n')
	}
	for _, s := range sugs {
		b.WriteString("\n")
		yes, session, no := 0, 0, 0
		for _, e := range s.Evidence {
			yes, session, no = yes+e.Allowed, session+e.AllowedSession, no+e.Denied
		}
		when := ""
		if !o.Now.IsZero() {
			when = " on " + o.Now.Format("2006-01-02")
		}
		fmt.Fprintf(&b, "# Suggested by aqlguard policy suggest%s from %d answer(s) of a human in the audit log\n", when, yes+session+no)
		fmt.Fprintf(&b, "# about %s.%s, argument %s: allowed %d, allowed for the session %d, denied %d.\n", s.Server, s.Tool, s.Argument, yes, session, no)
		for _, e := range s.Evidence {
			fmt.Fprintf(&b, "#   %s: allowed %d, for the session %d, denied %d (records %s)\n",
				commentSafe(strconv.Quote(e.Value)), e.Allowed, e.AllowedSession, e.Denied, seqList(e.Seqs))
		}
		if s.Action == policy.ActionAutoApprove {
			b.WriteString("# It approves only these values, each whole (a command line command by command,\n" +
				"# resolved statically); every other call of the tool is judged as before.\n")
		}
		fmt.Fprintf(&b, "[[agents.%s.rules]]\n", tomlKey(s.Principal))
		fmt.Fprintf(&b, "action = %s\n", tomlString(s.Rule.Action))
		fmt.Fprintf(&b, "operation = %s\n", tomlString(s.Rule.Operation))
		fmt.Fprintf(&b, "argument = %s\n", tomlString(s.Rule.Argument))
		fmt.Fprintf(&b, "pattern = %s\n", tomlString(s.Rule.Pattern))
	}
	return b.String()
}

func seqList(seqs []uint64) string {
	var parts []string
	for i, s := range seqs {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("… %d more", len(seqs)-i))
			break
		}
		parts = append(parts, strconv.FormatUint(s, 10))
	}
	return strings.Join(parts, ", ")
}

// commentSafe keeps a comment on its line.
func commentSafe(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func tomlKey(k string) string {
	if bareKey.MatchString(k) {
		return k
	}
	return tomlString(k)
}

// tomlString is a TOML basic string: JSON's escapes are TOML's.
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// check compiles the configuration with sugs and judges every answered
// call again: "" when each suggestion decides the calls it covers as the
// human did and no call the human denied runs unasked; else why not.
func check(cfg *config.Config, before string, sugs []Suggestion, o Options, answers []Answer) string {
	text := edit(before, sugs, o)
	name := cfg.Path
	if name == "" {
		name = "config.toml"
	}
	edited, err := policy.Parse([]byte(text), name)
	if err != nil {
		return "the configuration with it does not load: " + err.Error()
	}
	edited.Agent = cfg.Agent
	if o.Managed != nil {
		old, _ := policy.Overlay(o.Managed, cfg)
		eff, notes := policy.Overlay(o.Managed, edited)
		if len(notes) > len(old.NotInEffect) {
			return "the managed policy does not let it take effect (" + notes[len(notes)-1].Msg + ")"
		}
		edited = eff
	}
	results, err := policytest.Run(edited, &policytest.File{Cases: cases(sugs)})
	if err != nil {
		return err.Error()
	}
	for _, r := range results {
		if !r.Pass {
			return "it would not decide the calls the human answered as the human did: " + r.Label + ": " + r.Why
		}
	}
	policies := map[string]*policy.Policy{}
	for _, a := range answers {
		if a.Said != "denied" {
			continue
		}
		p, ok := policies[a.Principal]
		if !ok {
			if p, err = policy.Compile(edited, a.Principal); err != nil {
				return err.Error()
			}
			policies[a.Principal] = p
		}
		if d := evaluator.Evaluate(p, step(a)); d.Outcome() == "allowed" {
			return fmt.Sprintf("it would let a call the human denied run (record %d)", a.Seq)
		}
	}
	return ""
}

// cases are policy test cases of the answered calls the suggestions
// decide: one per distinct call.
func cases(sugs []Suggestion) []policytest.Case {
	var out []policytest.Case
	for _, s := range sugs {
		expect := "allowed"
		if s.Action == policy.ActionRefuse {
			expect = "refuses"
		}
		seen := map[string]bool{}
		for _, e := range s.Evidence {
			for _, a := range e.answers {
				args, _ := json.Marshal(a.Arguments)
				if seen[string(args)] {
					continue
				}
				seen[string(args)] = true
				said := fmt.Sprintf("allowed %d times", e.Allowed+e.AllowedSession)
				if expect == "refuses" {
					said = fmt.Sprintf("denied %d times", e.Denied)
				}
				out = append(out, policytest.Case{
					Name:      fmt.Sprintf("%s %s=%s: %s by a human (record %d)", s.Server+"."+s.Tool, s.Argument, strconv.Quote(e.Value), said, a.Seq),
					Tool:      s.Server + "." + s.Tool,
					Arguments: a.Arguments,
					Agent:     s.Principal,
					Expect:    expect,
					Rule:      s.Source,
				})
			}
		}
	}
	return out
}

// caseOut is a policytest.Case as written: what is not set left out.
type caseOut struct {
	Name      string         `toml:"name"`
	Tool      string         `toml:"tool"`
	Arguments map[string]any `toml:"arguments,omitempty"`
	Agent     string         `toml:"agent,omitempty"`
	Expect    string         `toml:"expect"`
	Rule      string         `toml:"rule,omitempty"`
}

// CasesFile renders cases as a policy test file.
func CasesFile(cs []policytest.Case, header string) ([]byte, error) {
	out := struct {
		Cases []caseOut `toml:"cases"`
	}{}
	for _, c := range cs {
		out.Cases = append(out.Cases, caseOut{c.Name, c.Tool, c.Arguments, c.Agent, c.Expect, c.Rule})
	}
	body, err := toml.Marshal(out)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		b.WriteString("# " + line + "\n")
	}
	b.WriteString("\n")
	b.Write(body)
	return b.Bytes(), nil
}
