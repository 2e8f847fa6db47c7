package secrets

import "testing"

func TestPlansList(t *testing.T) {
	s := Default()
	n := 0
	for _, r := range s.rules {
		if r.plan.kind == planWhole {
			t.Logf("whole %s: %s", r.id, r.plan.why)
		} else {
			n++
			for _, b := range r.plan.branches {
				t.Logf("anchored %s pre=%v maxLen=%d anchors=%q", r.id, b.pre, b.maxLen, b.anchors)
			}
		}
	}
	t.Logf("%d anchored of %d; skipped %v", n, len(s.rules), s.skipped)
}
