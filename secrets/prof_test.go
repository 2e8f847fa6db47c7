package secrets

import (
	"testing"
	"time"
)

func TestProfAllow(t *testing.T) {
	var r *rule
	for _, x := range Default().rules {
		if x.id == "generic-api-key" {
			r = x
		}
	}
	secret := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	match := "cache_key: " + secret
	line := "\n" + match
	for i, a := range append(append([]*allowlist{}, Default().global...), r.allow...) {
		t0 := time.Now()
		for j := 0; j < 1000; j++ {
			a.allowed(&existsRun{}, secret, match, line)
		}
		t.Logf("%d target=%d and=%v stop=%d re=%v: %v", i, a.target, a.and, len(a.stopwords), a.re != nil, time.Since(t0)/1000)
	}
	t0 := time.Now()
	for j := 0; j < 1000; j++ {
		r.re.FindStringSubmatchIndex(match)
	}
	t.Logf("rerun %v", time.Since(t0)/1000)
}

func TestProfX(t *testing.T) {
	var r *rule
	for _, x := range Default().rules {
		if x.id == "generic-api-key" {
			r = x
		}
	}
	br := r.plan.branches[0]
	t.Logf("prog size: rule %d", len(r.re.String()))
	secret := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	text := "\ncache_key: " + secret + "\n"
	for _, n := range []int{100, 1000, 5000} {
		in := text
		for len(in) < n {
			in += "some more ordinary text follows here\n"
		}
		t0 := time.Now()
		for j := 0; j < 1000; j++ {
			br.at1.FindStringSubmatchIndex(in[6:])
		}
		t.Logf("at1 on %d: %v", len(in), time.Since(t0)/1000)
		t0 = time.Now()
		for j := 0; j < 1000; j++ {
			br.at1.FindStringIndex(in[6:])
		}
		t.Logf("at1 index on %d: %v", len(in), time.Since(t0)/1000)
	}
}

func BenchmarkBigAllow(b *testing.B) {
	var r *rule
	for _, x := range Default().rules {
		if x.id == "generic-api-key" {
			r = x
		}
	}
	a := r.allow[1]
	secret := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	match := "cache_key: " + secret
	var run existsRun
	for b.Loop() {
		a.ex.anywhere(&run, match)
	}
}
