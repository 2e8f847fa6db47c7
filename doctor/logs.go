package doctor

import "github.com/aqlguard/aqlguard/clientconfig"

// logChecks say, for each client found here, where it keeps aqlguard's
// log: what aqlguard and the servers behind it write to stderr, and why
// a server did not start (the client shows only the first line).
func logChecks(in Input) []Check {
	var out []Check
	seen := map[string]bool{}
	for _, f := range clientconfig.Detect(in.Env, in.Clients...) {
		if seen[f.Client] {
			continue
		}
		seen[f.Client] = true
		if where := clientconfig.WhereLogs(in.Env, f.Client); where != "" {
			out = append(out, Check{OK, "log " + f.Client, "aqlguard's log, and why a server did not start: " + where})
		}
	}
	return out
}
