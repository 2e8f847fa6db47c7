//go:build unix

package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The marker is read and its log head written through a mapping once it
// is whole; two processes' commits through their mappings keep one
// chain (each sees the other's head, written to the same page cache).
func TestMarkerMappedByTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	a := openIn(t, dir, Options{})
	b := openIn(t, dir, Options{})
	for i := range 60 {
		if err := commitRecord([]*Store{a, b}[i%2], fmt.Sprint("seq-", i)); err != nil {
			t.Fatal(err)
		}
	}
	if a.gen.mapped.Load() == nil || b.gen.mapped.Load() == nil {
		t.Fatalf("the marker is not mapped (a %v, b %v)", a.gen.mapped.Load() != nil, b.gen.mapped.Load() != nil)
	}
	if n := verify(t, a); n != 60 {
		t.Fatalf("%d records, want 60", n)
	}
}

// A marker file cut short under the mapping (to nothing: an access
// faults; to part of it: the mapping reads zeros past its end) is no
// crash and no wrong head: the commit drops the mapping and reads and
// writes the file as it did before there was one: the marker whole
// again after it and the chain going on, or, cut inside the generation,
// every commit refused as before.
func TestMarkerCutShortUnderTheMapping(t *testing.T) {
	for _, size := range []int64{0, 4, 20, markerSegAt} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			dir := t.TempDir()
			s := openIn(t, dir, Options{})
			for i := range 3 {
				if err := commitRecord(s, fmt.Sprint("before-", i)); err != nil {
					t.Fatal(err)
				}
			}
			if s.gen.mapped.Load() == nil {
				t.Fatal("the marker is not mapped")
			}
			path := filepath.Join(dir, GenerationFile)
			if err := os.Truncate(path, size); err != nil {
				t.Fatal(err)
			}
			err := commitRecord(s, "after")
			if s.gen.mapped.Load() != nil {
				t.Fatal("the mapping was kept over a marker cut short")
			}
			if size > 0 && size < 8 {
				if err == nil || !strings.Contains(err.Error(), "reading the state generation") {
					t.Fatalf("a commit on a generation cut to %d bytes: %v", size, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("a commit after the marker was cut to %d bytes: %v", size, err)
			}
			if err := commitRecord(s, "after, again"); err != nil {
				t.Fatal(err)
			}
			if st, err := os.Stat(path); err != nil || st.Size() != markerSize {
				t.Fatalf("the marker after the commits: %v, %v bytes (want %d)", err, st.Size(), markerSize)
			}
			if n := verify(t, s); n != 5 {
				t.Fatalf("%d records, want 5", n)
			}
		})
	}
}
