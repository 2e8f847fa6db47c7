package secrets

import (
	"bytes"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
)

// The gitleaks configuration format (config/config.go of gitleaks v8),
// as its TOML spells it. Unknown keys are refused: a newer ruleset
// that uses a feature this package does not implement fails its
// tests instead of being half applied.
type tomlConfig struct {
	Title       string          `toml:"title"`
	Description string          `toml:"description"`
	MinVersion  string          `toml:"minVersion"`
	Allowlist   *tomlAllowlist  `toml:"allowlist"`  // deprecated single form
	Allowlists  []tomlAllowlist `toml:"allowlists"` // may carry targetRules
	Rules       []tomlRule      `toml:"rules"`
	// Extend is refused: a ruleset that extends another is not one on
	// its own.
	Extend map[string]any `toml:"extend"`
}

type tomlRule struct {
	ID          string          `toml:"id"`
	Description string          `toml:"description"`
	Regex       string          `toml:"regex"`
	Path        string          `toml:"path"`
	SecretGroup int             `toml:"secretGroup"`
	Entropy     float64         `toml:"entropy"`
	Keywords    []string        `toml:"keywords"`
	Tags        []string        `toml:"tags"`
	Allowlist   *tomlAllowlist  `toml:"allowlist"` // deprecated single form
	Allowlists  []tomlAllowlist `toml:"allowlists"`
	Required    []tomlRequired  `toml:"required"`
	SkipReport  bool            `toml:"skipReport"`
}

type tomlAllowlist struct {
	Description string   `toml:"description"`
	Condition   string   `toml:"condition"`
	Commits     []string `toml:"commits"`
	Paths       []string `toml:"paths"`
	RegexTarget string   `toml:"regexTarget"`
	Regexes     []string `toml:"regexes"`
	StopWords   []string `toml:"stopwords"`
	TargetRules []string `toml:"targetRules"`
}

type tomlRequired struct {
	ID            string `toml:"id"`
	WithinLines   *int   `toml:"withinLines"`
	WithinColumns *int   `toml:"withinColumns"`
}

// rule is one compiled rule, as gitleaks' detectRule applies it to a
// text that has no file path and no commit.
type rule struct {
	id          string
	description string
	expr        string                // the regex
	ncap        int                   // its groups
	re          func() *regexp.Regexp // compiled on first use (setRegex)
	secretGroup int
	entropy     float64
	keywords    []string // lower case, as gitleaks folds them
	allow       []*allowlist
	check       checker // the format's own check; nil when it has none
	plan        plan    // how the regex is run (plan.go)
}

// setRegex sets the rule's regex. It is parsed now and compiled when
// first needed: an anchored rule runs it only over a match it found,
// to take its groups, and most rules never match.
func (r *rule) setRegex(expr string) error {
	tree, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return err
	}
	if r.secretGroup < 0 || r.secretGroup > tree.MaxCap() {
		return fmt.Errorf("secretGroup %d, the regex has %d groups", r.secretGroup, tree.MaxCap())
	}
	r.expr, r.ncap = expr, tree.MaxCap()
	r.re = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
	return nil
}

// What an allowlist's regexes are matched against.
const (
	targetSecret = iota
	targetMatch
	targetLine
)

// allowlist is one gitleaks allowlist that can apply to a finding in
// a text: its regexes and stop words. Allowlists that name only paths
// or commits never apply to a result and are dropped when compiled;
// so are AND allowlists that name a path or a commit, since a result
// has neither and AND needs every condition.
type allowlist struct {
	and    bool
	target int
	// re is the regexes joined by |, nil when none; compiled on first
	// use, when any cannot answer.
	re func() *regexp.Regexp
	// any answers for re unless it can match the empty string, cheaper
	// than Go's regexp: gitleaks' generic allowlist is one alternation of
	// forty words under (?i), with no literal prefix to look for.
	any       *anySearch
	stopwords []string      // lower case
	stopIndex *keywordIndex // the stop words, when all are ASCII
}

// allowed reports whether the allowlist lets a finding pass, as
// gitleaks' checkFindingAllowed does.
func (a *allowlist) allowed(run *existsRun, secret, match, line string) bool {
	t := secret
	switch a.target {
	case targetMatch:
		t = match
	case targetLine:
		t = line
	}
	reOK := false
	if a.re != nil && t != "" {
		// gitleaks tests re.FindString(t) != "": an empty leftmost match
		// does not count.
		if a.any != nil {
			reOK = a.any.match(run, t)
		} else {
			loc := a.re().FindStringIndex(t)
			reOK = loc != nil && loc[1] > loc[0]
		}
	}
	swOK := a.hasStopword(secret)
	if a.and {
		if a.re != nil && !reOK {
			return false
		}
		if len(a.stopwords) > 0 && !swOK {
			return false
		}
		return true
	}
	return reOK || swOK
}

func (a *allowlist) hasStopword(secret string) bool {
	if len(a.stopwords) == 0 || secret == "" {
		return false
	}
	if a.stopIndex != nil {
		// ASCII stop words in a secret lowered the ASCII way: what
		// strings.ToLower and Contains find, except in a secret with a
		// non-ASCII letter that lowers to ASCII (İ, K), looked at below.
		if a.stopIndex.contains(secret) {
			return true
		}
		if isASCII(secret) {
			return false
		}
	}
	s := strings.ToLower(secret)
	for _, w := range a.stopwords {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// ruleset is a gitleaks configuration read and checked, its rules not
// yet compiled: parsing some two hundred regexes costs a process about
// 20 ms, which a client's hook would pay at every tool call, so a rule
// is compiled (compileRule) when a scan first needs it, or at once by
// newScanner.
type ruleset struct {
	specs  []ruleSpec
	global []*allowlist
	// skipped names the rules of the configuration that can never fire
	// on a result, with the reason: path rules and report-less rules.
	skipped map[string]string
}

// ruleSpec is one rule as the configuration and tuning (tuning.go)
// declare it.
type ruleSpec struct {
	id string
	tr tomlRule // its Regex as tuning left it
	// targeted are the global allowlists that name the rule, compiled
	// with the ruleset; tuned are tuning's lists for it.
	targeted []*allowlist
	tuned    []tomlAllowlist
}

// parseRuleset reads a gitleaks TOML configuration and keeps what of
// it can apply to a text without a path.
func parseRuleset(data []byte) (*ruleset, error) {
	var c tomlConfig
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("secrets: reading the ruleset: %w", err)
	}
	if c.Extend != nil {
		return nil, fmt.Errorf("secrets: the ruleset extends another (extend), which is not supported")
	}
	rs := &ruleset{skipped: map[string]string{}}

	globals := c.Allowlists
	if c.Allowlist != nil {
		if len(globals) > 0 {
			return nil, fmt.Errorf("secrets: [allowlist] is deprecated and cannot be used alongside [[allowlists]]")
		}
		globals = []tomlAllowlist{*c.Allowlist}
	}
	targeted := map[string][]*allowlist{}
	for i, ta := range globals {
		a, err := compileAllowlist(ta)
		if err != nil {
			return nil, fmt.Errorf("secrets: global allowlist %d: %w", i+1, err)
		}
		if len(ta.TargetRules) > 0 {
			for _, id := range ta.TargetRules {
				if a != nil {
					targeted[id] = append(targeted[id], a)
				} else if _, ok := targeted[id]; !ok {
					targeted[id] = nil
				}
			}
			continue
		}
		if a != nil {
			rs.global = append(rs.global, a)
		}
	}

	seen := map[string]bool{}
	for _, tr := range c.Rules {
		if strings.TrimSpace(tr.ID) == "" {
			return nil, fmt.Errorf("secrets: a rule has no id")
		}
		if seen[tr.ID] {
			return nil, fmt.Errorf("secrets: rule %s is defined twice", tr.ID)
		}
		seen[tr.ID] = true
		if len(tr.Required) > 0 {
			// Composite rules (gitleaks 8.28+) are not implemented; refuse
			// rather than report their primary part alone.
			return nil, fmt.Errorf("secrets: rule %s: [[rules.required]] is not supported", tr.ID)
		}
		skip, err := skipReason(tr)
		if err != nil {
			return nil, err
		}
		if skip != "" {
			rs.skipped[tr.ID] = skip
			continue
		}
		rs.specs = append(rs.specs, ruleSpec{id: tr.ID, tr: tr})
	}
	for id, lists := range targeted {
		if !seen[id] {
			return nil, fmt.Errorf("secrets: a global allowlist targets rule %s, which does not exist", id)
		}
		for i := range rs.specs {
			if rs.specs[i].id == id {
				rs.specs[i].targeted = append(rs.specs[i].targeted, lists...)
			}
		}
	}
	return rs, nil
}

// skipReason says why a rule cannot apply to a result, or "" when it
// can.
func skipReason(tr tomlRule) (string, error) {
	switch {
	case tr.SkipReport:
		return "skipReport: only reported as part of a composite rule", nil
	case tr.Regex == "" && tr.Path != "":
		return "path only: a result has no file path", nil
	case tr.Path != "":
		// gitleaks checks the path first and returns nothing when it
		// does not match; a result has no path to match.
		return "needs a file path matching " + tr.Path, nil
	case tr.Regex == "":
		return "", fmt.Errorf("secrets: rule %s has neither regex nor path", tr.ID)
	}
	return "", nil
}

// compileRule compiles one rule that can apply to a result: its regex,
// its allowlists (its own, the global ones that name it, tuning's) and
// the plan of how a scan runs it.
func compileRule(sp ruleSpec) (*rule, error) {
	tr := sp.tr
	r := &rule{
		id:          tr.ID,
		description: tr.Description,
		secretGroup: tr.SecretGroup,
		entropy:     tr.Entropy,
	}
	if err := r.setRegex(tr.Regex); err != nil {
		return nil, fmt.Errorf("secrets: rule %s: %w", tr.ID, err)
	}
	for _, k := range tr.Keywords {
		r.keywords = append(r.keywords, strings.ToLower(k))
	}
	lists := tr.Allowlists
	if tr.Allowlist != nil {
		if len(lists) > 0 {
			return nil, fmt.Errorf("secrets: rule %s: [rules.allowlist] cannot be used alongside [[rules.allowlists]]", tr.ID)
		}
		lists = []tomlAllowlist{*tr.Allowlist}
	}
	for i, ta := range lists {
		a, err := compileAllowlist(ta)
		if err != nil {
			return nil, fmt.Errorf("secrets: rule %s: allowlist %d: %w", tr.ID, i+1, err)
		}
		if a != nil {
			r.allow = append(r.allow, a)
		}
	}
	r.allow = append(r.allow, sp.targeted...)
	for _, ta := range sp.tuned {
		a, err := compileAllowlist(ta)
		if err != nil {
			return nil, fmt.Errorf("secrets: tuning of %s: %w", tr.ID, err)
		}
		if a != nil {
			r.allow = append(r.allow, a)
		}
	}
	p, err := makePlan(r.expr, r.keywords)
	if err != nil {
		return nil, fmt.Errorf("secrets: rule %s: %w", tr.ID, err)
	}
	r.plan = p
	r.check = checkers[r.id]
	return r, nil
}

// compileAllowlist compiles one allowlist, or returns nil when it can
// never apply to a finding in a text without a path or a commit.
func compileAllowlist(ta tomlAllowlist) (*allowlist, error) {
	if len(ta.Commits) == 0 && len(ta.Paths) == 0 && len(ta.Regexes) == 0 && len(ta.StopWords) == 0 {
		return nil, fmt.Errorf("must contain at least one check for: commits, paths, regexes, or stopwords")
	}
	a := &allowlist{}
	switch strings.ToUpper(ta.Condition) {
	case "AND", "&&":
		a.and = true
	case "", "OR", "||":
	default:
		return nil, fmt.Errorf("unknown condition %q (expected 'and', 'or')", ta.Condition)
	}
	switch ta.RegexTarget {
	case "", "secret":
		a.target = targetSecret
	case "match":
		a.target = targetMatch
	case "line":
		a.target = targetLine
	default:
		return nil, fmt.Errorf("unknown regexTarget %q (expected 'match', 'line')", ta.RegexTarget)
	}
	// Compile what is there even when it cannot apply, so that a broken
	// pattern is an error whatever the condition.
	for _, p := range ta.Paths {
		if _, err := regexp.Compile(p); err != nil {
			return nil, fmt.Errorf("path %q: %w", p, err)
		}
	}
	if len(ta.Regexes) > 0 {
		for _, p := range ta.Regexes {
			if _, err := regexp.Compile(p); err != nil {
				return nil, fmt.Errorf("regex %q: %w", p, err)
			}
		}
		// gitleaks joins them as (?:a|b|...), so that flags set at the
		// top of one pattern, such as the (?i) of the global list's first,
		// hold for the patterns after it too. Kept as it is.
		joined := "(?:" + strings.Join(ta.Regexes, "|") + ")"
		tree, err := syntax.Parse(joined, syntax.Perl)
		if err != nil {
			return nil, fmt.Errorf("regexes: %w", err)
		}
		a.re = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(joined) })
		a.any = newAnySearch(tree)
	}
	dup := map[string]bool{}
	for _, w := range ta.StopWords {
		w = strings.ToLower(w)
		if !dup[w] {
			dup[w] = true
			a.stopwords = append(a.stopwords, w)
		}
	}
	if len(a.stopwords) > 0 && slices.IndexFunc(a.stopwords, func(w string) bool { return !isASCII(w) }) < 0 {
		if k, err := newKeywordIndex(a.stopwords); err == nil {
			k.plain = true
			a.stopIndex = k
		}
	}
	if a.and && (len(ta.Commits) > 0 || len(ta.Paths) > 0) {
		return nil, nil // needs a path or a commit, which a result has not
	}
	if a.re == nil && len(a.stopwords) == 0 {
		return nil, nil // paths or commits only
	}
	return a, nil
}
