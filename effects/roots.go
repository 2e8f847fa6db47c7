package effects

import "strings"

// RootsOf are the roots a server names on its command line, as its
// profile says where (Profile.Roots): for the filesystem server, its
// allowed directories. command and args are the server's entry as
// configured; the roots are returned as written there (the caller makes
// them absolute and clean). nil when the profile says the command line
// names none, or the command line is not one the profile can read.
func (p *Profile) RootsOf(command string, args []string) []string {
	if p == nil || len(p.Roots.ArgsAfter) == 0 {
		return nil
	}
	argv := append([]string{command}, args...)
	start := -1
	for i, a := range argv {
		for _, marker := range p.Roots.ArgsAfter {
			if strings.Contains(a, marker) {
				start = i + 1
				break
			}
		}
		if start >= 0 {
			break
		}
	}
	if start < 0 {
		return nil
	}
	rest := argv[start:]
	var roots []string
	if len(p.Roots.Options) == 0 {
		for _, a := range rest {
			if a != "" && !strings.HasPrefix(a, "-") {
				roots = append(roots, a)
			}
		}
		return roots
	}
	for i := 0; i < len(rest); i++ {
		for _, opt := range p.Roots.Options {
			switch {
			case rest[i] == opt && i+1 < len(rest):
				roots = append(roots, rest[i+1])
				i++
			case strings.HasPrefix(rest[i], opt+"="):
				roots = append(roots, strings.TrimPrefix(rest[i], opt+"="))
			}
		}
	}
	return roots
}

// ProfileNamed is the shipped profile of that name, or nil.
func ProfileNamed(name string) *Profile {
	ps, _ := Profiles()
	for _, p := range ps {
		if p.Name == name {
			return p
		}
	}
	return nil
}
