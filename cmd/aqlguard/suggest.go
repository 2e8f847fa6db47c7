package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/aqlguard/aqlguard/audit"
	"github.com/aqlguard/aqlguard/audit/suggest"
	"github.com/aqlguard/aqlguard/store"
)

// cmdPolicySuggest reads the human's answers in the audit log and prints
// the rules they support as a diff of the config, with their evidence.
// Nothing is applied: the person saves the diff (patch, or by hand).
func cmdPolicySuggest(args []string, stdout, stderr io.Writer) int {
	flags, g := newFlags("policy suggest", stderr)
	since := flags.String("since", "7d", "answers at or after this time (RFC 3339, or back from now: 7d, 12h)")
	until := flags.String("until", "", "answers before this time")
	minimum := flags.Int("min", 3, "agreeing answers a value needs before a rule is suggested for it")
	casesFile := flags.String("cases", "", "write policy test cases of the suggestions to this file")
	rest, err := parseInterspersed(flags, args)
	if err != nil || len(rest) > 0 || *minimum < 1 {
		fmt.Fprint(stderr, policyUsage)
		return 2
	}
	now := time.Now()
	o := suggest.Options{Min: *minimum, Now: now, Agent: g.agent}
	if o.Since, err = audit.ParseTime(*since, now); err != nil {
		fmt.Fprintf(stderr, "aqlguard policy suggest: --since: %v\n", err)
		return 2
	}
	if *until != "" {
		if o.Until, err = audit.ParseTime(*until, now); err != nil {
			fmt.Fprintf(stderr, "aqlguard policy suggest: --until: %v\n", err)
			return 2
		}
	}
	// The user's file as it is, and the managed layer apart: the
	// suggestions edit the first and are checked under the second.
	agent := g.agent
	g.agent = "" // --agent selects answers here; the file's own agent stays
	user, err := loadUserConfig(g)
	if err == nil {
		o.Managed, err = loadManaged(g)
	}
	g.agent = agent
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	var before string
	if user.Path != "" {
		b, err := os.ReadFile(user.Path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "aqlguard: %v\n", err)
			return 1
		}
		before = string(b)
	} else {
		user.Path = defaultConfigPath() // the file the suggestions would start
	}
	st, code := storeFor(g, readHistory, stderr)
	if st == nil {
		return code
	}
	var records []store.Record
	err = eachRecord(st, 0, func(r store.Record, _ []byte) error {
		records = append(records, r)
		return nil
	})
	st.Close()
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard policy suggest: reading the audit log: %v\n", err)
		return 1
	}
	answers := suggest.Answers(records, o)
	res, err := suggest.Suggest(user, before, answers, o)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard policy suggest: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%d answer(s) of a human in the audit log since %s; %d rule(s) suggested for %s\n",
		res.Answers, o.Since.Format(time.RFC3339), len(res.Suggestions), user.Path)
	for _, s := range res.Suggestions {
		yes, session, no := 0, 0, 0
		for _, e := range s.Evidence {
			yes, session, no = yes+e.Allowed, session+e.AllowedSession, no+e.Denied
		}
		fmt.Fprintf(stdout, "\n  %s for %s.%s (agent %s), %s ~ %s\n    evidence: allowed %d, allowed for the session %d, denied %d\n",
			s.Action, s.Server, s.Tool, s.Principal, s.Argument, s.Rule.Pattern, yes, session, no)
		for _, e := range s.Evidence {
			fmt.Fprintf(stdout, "      %q: allowed %d, for the session %d, denied %d (records %v)\n", e.Value, e.Allowed, e.AllowedSession, e.Denied, e.Seqs)
		}
	}
	if len(res.Notes) > 0 {
		fmt.Fprintln(stdout, "\nnot suggested:")
		for _, n := range res.Notes {
			fmt.Fprintln(stdout, "  "+n)
		}
	}
	if res.Diff == "" {
		fmt.Fprintln(stdout, "\nnothing to change")
		return 0
	}
	fmt.Fprintf(stdout, "\nThe change, for you to review and save (nothing was applied; `patch -p1 < FILE` from / applies it):\n\n%s", res.Diff)
	if *casesFile != "" {
		header := fmt.Sprintf("Policy test cases of the rules aqlguard policy suggest proposed on %s for %s.\n"+
			"They pass once the suggested change is saved: aqlguard policy test --config %s %s",
			now.Format("2006-01-02"), user.Path, user.Path, *casesFile)
		data, err := suggest.CasesFile(res.Cases, header)
		if err == nil {
			err = os.WriteFile(*casesFile, data, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "aqlguard policy suggest: --cases: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "\n%d policy test case(s) written to %s\n", len(res.Cases), *casesFile)
	}
	return 0
}
