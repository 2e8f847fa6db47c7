//go:build windows || plan9

package app

// SystemLogAnchor: no system log aqlguard writes to on this platform yet
// (the Windows event log would be the place).
func SystemLogAnchor() func(string) error {
	AnchorsOff = "no system log on this platform"
	return nil
}
