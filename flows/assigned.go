package flows

import "github.com/aqlguard/aqlguard/secrets"

// addAssigned adds to found the values text, piece's text read from a
// place that keeps secrets, assigns to secret names (secrets.Assigned),
// but for those a finding of the ruleset already covers.
func addAssigned(found []secretAt, piece int, where, text string) []secretAt {
	n := len(found)
	for _, f := range secrets.Assigned(where, text) {
		covered := false
		for _, x := range found[:n] {
			if x.piece == piece && x.f.Start < f.End && f.Start < x.f.End {
				covered = true
				break
			}
		}
		if !covered {
			found = append(found, secretAt{piece, f})
		}
	}
	return found
}
