package procfs

import (
	"errors"
	"os"
	"runtime"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want Stat // zero: an error
	}{
		{"42 (sleep) S 7 42 42 0 -1", Stat{Pid: 42, Ppid: 7, Pgrp: 42, State: 'S'}},
		{"42 (a) b) (c)) Z 1 9 9", Stat{Pid: 42, Ppid: 1, Pgrp: 9, State: 'Z'}}, // a command name with ") " in it
		{"42 (x", Stat{}},
		{"42 (x) R 1", Stat{}},
		{"42 (x) R one 2", Stat{}},
	} {
		got, err := parse(42, []byte(tc.raw))
		if (err == nil) != (tc.want != Stat{}) || got != tc.want {
			t.Errorf("parse(%q) = %+v, %v; want %+v", tc.raw, got, err, tc.want)
		}
	}
}

func TestReadSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("no /proc")
	}
	s, err := Read(os.Getpid())
	if err != nil || s.Ppid != os.Getppid() || s.Ended() {
		t.Fatalf("Read(self) = %+v, %v; parent %d", s, err, os.Getppid())
	}
	if _, err := Read(-1); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Read(-1): %v, want not exist", err)
	}
}
