//go:build !linux

package proxy

// kernelRealpath is nil where the kernel names no descriptor's path in
// one call: each component is looked up in turn.
var kernelRealpath func(string) (string, error)
