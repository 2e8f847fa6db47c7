package evaluator

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/aqlguard/aqlguard/policy"
)

// Base risk by semantic category. The order follows the danger levels of
// danger-levels.md 3.3 (Read safe; Create, Update, Execute reversible;
// Delete destructive), spread so that, with no other signal, READ and
// CREATE land in the advisory tier and UPDATE, EXECUTE and DELETE in the
// confirm tier.
var baseRisk = map[policy.Category]int{
	policy.Read:    10,
	policy.Create:  25,
	policy.Update:  40,
	policy.Execute: 45,
	policy.Delete:  55,
}

// unknownCategoryRisk applies when a step has no (or an unknown) category:
// danger-levels.md 7.1 forbids treating unlabelled operations as safe, and
// "could do anything" is what EXECUTE means.
const unknownCategoryRisk = 45

const (
	readOnlyCap    = 10
	destructiveMin = 50
	openWorldBonus = 5
	safeNameCap    = 15
	dangerousMin   = 70
	forbiddenMin   = 90
)

// Name patterns of danger-levels.md 6.1-6.3. They are all a literal prefix
// or suffix, so they are matched as such rather than through globs.
var (
	safeNames      = []string{"get_*", "list_*", "search_*", "count_*", "check_*", "introspect*"}
	dangerousNames = []string{"force_*", "*_permanently", "bulk_delete*", "override_*", "bypass_*", "*_without_backup", "purge_*"}
	forbiddenNames = []string{"drop_*", "delete_all*", "truncate_*", "reset_*", "destroy_*", "wipe_*", "*_production"}
)

func nameMatches(pat, name string) bool {
	if rest, ok := strings.CutPrefix(pat, "*"); ok {
		return strings.HasSuffix(name, rest)
	}
	return strings.HasPrefix(name, strings.TrimSuffix(pat, "*"))
}

// Risk scores a step from 0 to 100 and explains each adjustment; see the
// package documentation for the table. p may be nil (no risk rules).
func Risk(p *policy.Policy, s Step) (score int, factors []string) {
	return newCall(&s).risk(p)
}

func (c *call) risk(p *policy.Policy) (int, []string) {
	s := c.s
	factors := make([]string, 0, 4)
	cat := policy.Category(strings.ToUpper(strings.TrimSpace(string(s.Category))))
	score, known := baseRisk[cat]
	if known {
		factors = append(factors, "risk: category "+string(cat)+" base "+strconv.Itoa(score))
	} else {
		score = unknownCategoryRisk
		factors = append(factors, "risk: category unknown, base "+strconv.Itoa(score)+" (as EXECUTE)")
	}

	destructive := isTrue(s.Annotations.Destructive)
	if isTrue(s.Annotations.ReadOnly) {
		if cat == policy.Delete {
			factors = append(factors, "risk: readOnlyHint ignored for a DELETE")
		} else if score > readOnlyCap {
			score = readOnlyCap
			factors = append(factors, "risk: readOnlyHint lowers to "+strconv.Itoa(score))
		}
	}
	if destructive && score < destructiveMin {
		score = destructiveMin
		factors = append(factors, "risk: destructiveHint raises to "+strconv.Itoa(score))
	}
	if isTrue(s.Annotations.OpenWorld) {
		score += openWorldBonus
		factors = append(factors, "risk: openWorldHint adds "+strconv.Itoa(openWorldBonus)+" ("+strconv.Itoa(score)+")")
	}

	names := c.names()
	// A reassuring name must not talk a declared destructive tool, or a
	// DELETE, down: names are chosen by whoever wrote the server.
	if !destructive && cat != policy.Delete && score > safeNameCap {
		if what, pat, ok := matchName(names, safeNames); ok {
			score = safeNameCap
			factors = append(factors, "risk: "+what+" matches safe pattern "+pat+", capped at "+strconv.Itoa(score))
		}
	}
	if what, pat, ok := matchName(names, dangerousNames); ok {
		score = max(score, dangerousMin)
		factors = append(factors, "risk: "+what+" matches dangerous pattern "+pat+", at least "+strconv.Itoa(dangerousMin))
	}
	if what, pat, ok := matchName(names, forbiddenNames); ok {
		score = max(score, forbiddenMin)
		factors = append(factors, "risk: "+what+" matches forbidden pattern "+pat+", at least "+strconv.Itoa(forbiddenMin))
	}

	if p != nil {
		for i := range p.RiskRules {
			r := &p.RiskRules[i]
			if !c.riskRuleMatches(r) {
				continue
			}
			score = max(score, r.Score)
			f := "risk: rule " + r.Source
			if r.Reason != "" {
				f += " (" + r.Reason + ")"
			}
			factors = append(factors, f+", at least "+strconv.Itoa(r.Score))
		}
	}
	return min(max(score, 0), 100), factors
}

func (c *call) riskRuleMatches(r *policy.CompiledRiskRule) bool {
	if r.Argument != "" {
		v, ok := c.arg(r.Argument)
		return ok && r.Pattern.MatchNormalized(v)
	}
	for _, sub := range c.subjects[:c.n] {
		if r.Pattern.MatchNormalized(sub.value) {
			return true
		}
	}
	return false
}

type name struct{ what, value string }

// names are the identifiers the danger-level patterns apply to: the tool
// name as the server spells it, snake-cased (deleteAllUsers ->
// delete_all_users), and the operation name.
func (c *call) names() []name {
	out := make([]name, 0, 2)
	if t := snakeName(c.s.Tool); t != "" {
		out = append(out, name{"tool name " + strconv.Quote(t), t})
	}
	if op := snakeName(c.s.Operation); op != "" && (len(out) == 0 || out[0].value != op) {
		out = append(out, name{"operation name " + strconv.Quote(op), op})
	}
	return out
}

func matchName(names []name, pats []string) (what, pat string, ok bool) {
	for _, n := range names {
		for _, p := range pats {
			if nameMatches(p, n.value) {
				return n.what, p, true
			}
		}
	}
	return "", "", false
}

func isTrue(b *bool) bool { return b != nil && *b }

// snakeName lower-cases a name and puts single underscores at word
// boundaries: camelCase and PascalCase humps, acronym ends (HTTPServer ->
// http_server), and any run of non-alphanumerics ("drop-table", "drop
// table", "__drop__table" -> drop_table). Leading and trailing separators
// are dropped, so "_drop_table" cannot slip past drop_*.
func snakeName(s string) string {
	if isSnake(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 4)
	rs := []rune(s)
	sep := false
	for i, r := range rs {
		switch {
		case unicode.IsUpper(r):
			if i > 0 {
				prev := rs[i-1]
				nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
				if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
					sep = true
				}
			}
			r = unicode.ToLower(r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
		default:
			sep = true
			continue
		}
		if sep && b.Len() > 0 {
			b.WriteByte('_')
		}
		sep = false
		b.WriteRune(r)
	}
	return b.String()
}

func isSnake(s string) bool {
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' {
		return s == ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '_':
			if s[i-1] == '_' {
				return false
			}
		default:
			return false
		}
	}
	return true
}
