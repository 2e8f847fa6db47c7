//go:build !unix

package main

import "io/fs"

// ownerUID is unknown where files have no uid.
func ownerUID(fs.FileInfo) (uint32, bool) { return 0, false }

// keepOwner has nothing to keep where files have no uid.
func keepOwner(string, fs.FileInfo) error { return nil }
