package config

import (
	"regexp"
)

var agentNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidAgentName reports whether s may name a principal.
func ValidAgentName(s string) bool { return agentNameRE.MatchString(s) }
