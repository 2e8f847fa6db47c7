package main

import (
	"errors"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// peerIsSelf reports whether the process at the other end of a unix
// socket connection runs as this user (SO_PEERCRED).
func peerIsSelf(c net.Conn) (bool, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return false, errors.New("not a unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return false, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return false, err
	}
	if credErr != nil {
		return false, credErr
	}
	return int(cred.Uid) == os.Getuid(), nil
}
