package registry

import (
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	var r Of[int]
	r.Kind = "[state] backend"
	r.Register("bbolt", 1)
	r.Register("postgres", 2)
	r.Register("twice", 3)
	r.Register("twice", 4)
	for _, c := range []struct {
		name, err string
		want      int
	}{
		{"bbolt", "", 1},
		{"postgres", "", 2},
		{"mysql", `[state] backend = "mysql" is not in this build (it has bbolt, postgres, twice)`, 0},
		{"twice", `[state] backend = "twice": 2 are registered under that name in this build, so it cannot tell which`, 0},
		{"", `[state] backend = "" is not in this build`, 0},
	} {
		got, err := r.Lookup(c.name)
		if c.err == "" {
			if err != nil || got != c.want {
				t.Errorf("Lookup(%q) = %d, %v; want %d", c.name, got, err, c.want)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), c.err) {
			t.Errorf("Lookup(%q) error = %v; want %q", c.name, err, c.err)
		}
	}
	if got := strings.Join(r.Names(), ","); got != "bbolt,postgres,twice" {
		t.Errorf("Names() = %s", got)
	}
}

func TestZeroValueIsEmpty(t *testing.T) {
	var r Of[string]
	if n := r.Names(); len(n) != 0 {
		t.Fatalf("Names() = %v", n)
	}
	if _, err := r.Lookup("x"); err == nil {
		t.Fatal("Lookup in an empty registry found something")
	}
}
