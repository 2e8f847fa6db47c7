//go:build unix

package main

import (
	"io/fs"
	"syscall"
)

// ownerUID is the uid that owns a file.
func ownerUID(fi fs.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}

// keepOwner gives the file at path the owner and group of fi (the file
// it replaces), where this process may: root editing a service's
// config (root-owned, group aqlguard) must not leave it root:root, which
// the service could no longer read.
func keepOwner(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if int(st.Uid) == syscall.Geteuid() && int(st.Gid) == syscall.Getegid() {
		return nil // a new file of ours has them already
	}
	return syscall.Chown(path, int(st.Uid), int(st.Gid))
}
