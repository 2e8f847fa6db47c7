package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
)

// listenUnix listens on a unix socket at path that only this user can
// open, from the moment it exists. The socket is made in a private
// directory (0700) beside path, set to 0600 there, and only then moved
// into place: chmod after a plain listen leaves a moment, under the
// process umask, in which another local user can connect.
func listenUnix(path string) (net.Listener, error) {
	if !filepath.IsAbs(path) {
		return nil, errors.New("the socket path must be absolute")
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("another server listens on %s", path)
		}
		_ = os.Remove(path) // left behind by an aqlguard that died
	}
	private, err := os.MkdirTemp(filepath.Dir(path), ".aqlguard-socket-")
	if err != nil {
		return nil, fmt.Errorf("making a private directory for the socket: %w", err)
	}
	defer os.Remove(private)
	made := filepath.Join(private, "s")
	ln, err := net.Listen("unix", made)
	if err != nil {
		return nil, err
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // it is not at made once moved: closing removes path
	if err := os.Chmod(made, 0o600); err != nil {
		ul.Close()
		os.Remove(made)
		return nil, err
	}
	if err := os.Rename(made, path); err != nil {
		ul.Close()
		os.Remove(made)
		return nil, err
	}
	return &unixListener{UnixListener: ul, path: path}, nil
}

// unixListener removes its socket file when closed.
type unixListener struct {
	*net.UnixListener
	path string
}

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	os.Remove(l.path)
	return err
}

// Addr is the socket's path as clients reach it.
func (l *unixListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

// sameUserOnly admits only connections from processes of this user
// (peerIsSelf), closing the others unanswered.
type sameUserOnly struct{ net.Listener }

func (l sameUserOnly) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if ok, err := peerIsSelf(c); ok {
			return c, nil
		} else if err != nil {
			fmt.Fprintln(os.Stderr, "aqlguard: a connection was refused: its peer could not be identified:", err)
		} else {
			fmt.Fprintln(os.Stderr, "aqlguard: a connection from another user was refused (auth = \"none\" serves only this user)")
		}
		c.Close()
	}
}
