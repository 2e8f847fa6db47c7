package secrets

import (
	"fmt"
	"slices"
)

// ruleIndex is what a scan needs of every rule before it runs any: the
// words the prefilter looks for (the rules' keywords and their
// branches' anchors, plan.go), which rules each word gates and which
// branches it anchors. Finding the anchors means parsing every regex;
// for the embedded ruleset the index is kept in generated form
// (index_gen.go, written by `go test ./secrets -run TestDefaultIndex
// -update` and checked against the ruleset by the same test), so that
// a process builds its Scanner without compiling a rule.
type ruleIndex struct {
	rules    []indexRule
	words    []string
	keyOf    [][]uint16 // by word: the rules it gates
	anchorOf [][]indexAnchor
}

// indexRule is a rule as the index knows it: its id, to tell a stale
// index, and the number of its plan's branches.
type indexRule struct {
	id       string
	branches int
}

// indexAnchor is branch b of rule r, anchored at a word.
type indexAnchor struct {
	r, b uint16
}

// indexOf derives the index of compiled rules.
func indexOf(rules []*rule) (ruleIndex, error) {
	var x ruleIndex
	ids := map[string]int{}
	word := func(w string) int {
		id, ok := ids[w]
		if !ok {
			id = len(x.words)
			ids[w] = id
			x.words = append(x.words, w)
			x.keyOf = append(x.keyOf, nil)
			x.anchorOf = append(x.anchorOf, nil)
		}
		return id
	}
	if len(rules) > 1<<16 {
		return ruleIndex{}, fmt.Errorf("secrets: %d rules, more than an index can name", len(rules))
	}
	for i, r := range rules {
		x.rules = append(x.rules, indexRule{id: r.id, branches: len(r.plan.branches)})
		for _, k := range r.keywords {
			id := word(k)
			if !slices.Contains(x.keyOf[id], uint16(i)) {
				x.keyOf[id] = append(x.keyOf[id], uint16(i))
			}
		}
		for b, br := range r.plan.branches {
			if b >= 1<<16 {
				return ruleIndex{}, fmt.Errorf("secrets: rule %s has more branches than an index can name", r.id)
			}
			for _, a := range br.anchors {
				id := word(a)
				x.anchorOf[id] = append(x.anchorOf[id], indexAnchor{r: uint16(i), b: uint16(b)})
			}
		}
	}
	if len(x.words) > 1<<16 {
		return ruleIndex{}, fmt.Errorf("secrets: %d keywords, more than an occurrence can name", len(x.words))
	}
	return x, nil
}

// agrees reports how rule ri, compiled, differs from what the index
// says of it (its id, branches, keywords and anchors), or "" when it
// does not: a stale generated index would make a scan miss what the
// rule finds.
func (x *ruleIndex) agrees(ri int, r *rule) string {
	if ri >= len(x.rules) || x.rules[ri].id != r.id {
		return fmt.Sprintf("rule %d is %s, the index has another", ri, r.id)
	}
	if x.rules[ri].branches != len(r.plan.branches) {
		return fmt.Sprintf("rule %s has %d branches, the index %d", r.id, len(r.plan.branches), x.rules[ri].branches)
	}
	var keys []string
	for w, rules := range x.keyOf {
		if slices.Contains(rules, uint16(ri)) {
			keys = append(keys, x.words[w])
		}
	}
	anchors := make([][]string, len(r.plan.branches))
	for w, refs := range x.anchorOf {
		for _, a := range refs {
			if int(a.r) == ri {
				anchors[a.b] = append(anchors[a.b], x.words[w])
			}
		}
	}
	if !sameWords(keys, slices.Compact(slices.Sorted(slices.Values(r.keywords)))) {
		return fmt.Sprintf("rule %s has keywords %q, the index %q", r.id, r.keywords, keys)
	}
	for b, br := range r.plan.branches {
		if !sameWords(anchors[b], br.anchors) {
			return fmt.Sprintf("rule %s's branch %d has anchors %q, the index %q", r.id, b, br.anchors, anchors[b])
		}
	}
	return ""
}

// sameWords reports whether a and b hold the same words as many times,
// in any order.
func sameWords(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
