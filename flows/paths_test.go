package flows

import "github.com/aqlguard/aqlguard/policy/paths"

func pathsPlace(p string) paths.Place { return paths.Canonical(p, "/home/u", "") }
