//go:build windows || plan9

package app

// SystemLogAnchor: no system log aqlguard writes to on this platform yet
// (the Windows event log would be the place).
func SystemLogAnchor() (anchor func(string) error, off string) {
	return nil, "no system log on this platform"
}
