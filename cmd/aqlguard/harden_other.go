//go:build !linux

package main

// harden does nothing where there is no PR_SET_DUMPABLE; macOS and
// Windows keep other users' processes out of ours by default.
func harden() error { return nil }
