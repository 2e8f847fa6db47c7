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
