//go:build unix && !darwin

package policy

const isDarwin = false
