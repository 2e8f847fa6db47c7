//go:build !linux

package main

import "net"

// peerIsSelf: without SO_PEERCRED, the socket's mode (0600, made in a
// private directory) is what keeps other users out.
func peerIsSelf(net.Conn) (bool, error) { return true, nil }
