//go:build !linux

package verify

// findOtherDisplay: without /proc there is no way to read the
// environment of the processes that started aqlguard, and the sockets
// of a session are the platform's own; only aqlguard's own environment
// names a display (macOS and Windows dialogs need none).
func findOtherDisplay() (Display, error) {
	return Display{}, noDisplay("aqlguard's environment names none")
}
