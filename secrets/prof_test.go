package secrets

import (
	"sort"
	"testing"
	"time"
)

func TestProfRules(t *testing.T) {
	s := Default()
	text := issueJSON
	occ := s.words.find(text, 0, len(text), nil)
	gated := map[int]bool{}
	for _, o := range occ {
		for _, ri := range s.keyOf[o.id] {
			gated[ri] = true
		}
	}
	type rc struct {
		id string
		d  time.Duration
	}
	var out []rc
	var ex existsRun
	for _, o := range occ {
		for _, br := range s.anchorOf[o.id] {
			if !gated[br.r] {
				continue
			}
			b := &s.rules[br.r].plan.branches[br.b]
			q := o.pos
			end := len(text)
			if b.maxLen >= 0 {
				end = min(len(text), q+b.maxLen+1)
			}
			t0 := time.Now()
			var ok bool
			for i := 0; i < 100; i++ {
				ok = b.exists.exists(&ex, text, q, end)
			}
			out = append(out, rc{s.rules[br.r].id + " " + s.words.words[o.id] + " " + map[bool]string{true: "YES"}[ok], time.Since(t0) / 100})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].d > out[j].d })
	var tot time.Duration
	for _, o := range out {
		tot += o.d
	}
	t.Logf("total %v over %d tries", tot, len(out))
	for _, o := range out[:min(25, len(out))] {
		t.Logf("%v %s", o.d, o.id)
	}
}

func dumpE(t *testing.T, n *enode, depth int) {
	pad := ""
	for i := 0; i < depth; i++ {
		pad += "  "
	}
	t.Logf("%s%v min=%d max=%d single=%v nullable=%v runes=%q", pad, n.op, n.min, n.max, n.single, n.nullable, string(n.runes))
	for _, s := range n.sub {
		dumpE(t, s, depth+1)
	}
}

func TestDumpGeneric(t *testing.T) {
	for _, r := range Default().rules {
		if r.id == "generic-api-key" {
			dumpE(t, r.plan.branches[0].exists.root, 0)
		}
	}
}

func BenchmarkExistsGeneric(b *testing.B) {
	var br *branch
	for _, r := range Default().rules {
		if r.id == "generic-api-key" {
			br = &r.plan.branches[0]
		}
	}
	text := `"url":"https://api.github.com/repos/golang/go/issues/61234","repository_url":"https://api.github.com/repos/golang/go"`
	q := 15
	var ex existsRun
	for b.Loop() {
		br.exists.exists(&ex, text, q, len(text))
	}
}
