//go:build windows || plan9

package main

// systemLogAnchor: no system log aqlguard writes to on this platform yet
// (the Windows event log would be the place).
func systemLogAnchor() func(string) error {
	anchorsOff = "no system log on this platform"
	return nil
}
