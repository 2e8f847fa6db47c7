//go:build !unix

package store

import "os"

// markerMap: no mapping here; the marker is read and written with
// pread and pwrite.
type markerMap struct{}

func mapMarker(*os.File) *markerMap { return nil }

func (*markerMap) read(*[markerSize]byte) bool { return false }
func (*markerMap) write(int, []byte) bool      { return false }
func (*markerMap) drop()                       {}
