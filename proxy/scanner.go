package proxy

import (
	"github.com/aqlguard/aqlguard/injection"
	"github.com/aqlguard/aqlguard/proxy/catalog"
)

// resultScanner is the injection scanner for what server returns in
// this session: it knows the tools of the session's other servers, so
// that a result telling the assistant to use one of them is seen (the
// first-sight review's detector, reading data). Built once per catalog
// and budget.
func (f *Front) resultScanner(server string, budget int) *injection.Scanner {
	cat := f.Catalog()
	f.scanMu.Lock()
	defer f.scanMu.Unlock()
	if f.scanCat != cat || f.scanBudget != budget {
		f.scanCat, f.scanBudget, f.scanners = cat, budget, map[string]*injection.Scanner{}
	}
	if s := f.scanners[server]; s != nil {
		return s
	}
	var own, others []string
	if cat != nil {
		for _, op := range cat.Downstream() {
			if op.Server == server {
				own = append(own, op.Tool.Name)
			} else {
				others = append(others, op.Tool.Name)
			}
		}
	}
	s := injection.New(injection.Options{Data: true, Budget: budget, OwnTools: own, OtherTools: others})
	f.scanners[server] = s
	return s
}

// scanState is what resultScanner keeps (Front.scanMu).
type scanState struct {
	scanCat    *catalog.Catalog
	scanBudget int
	scanners   map[string]*injection.Scanner
}
