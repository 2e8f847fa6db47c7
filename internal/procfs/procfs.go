// Package procfs reads what Linux's /proc/PID/stat says of a process:
// its state, parent and process group. Elsewhere there is no /proc, and
// it finds no processes.
package procfs

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
)

// Stat is a process as /proc/PID/stat shows it.
type Stat struct {
	Pid, Ppid, Pgrp int
	// State is the state letter: 'R', 'S', 'D', ...; 'Z' has exited and
	// waits for its status to be collected; 'X' is gone.
	State byte
}

// Ended reports whether the process has exited (a zombie, or gone).
func (s Stat) Ended() bool { return s.State == 'Z' || s.State == 'X' }

// Read reads one process. Its error wraps os.ErrNotExist when there is
// no such process (or no /proc).
func Read(pid int) (Stat, error) { return ReadIn("/proc", pid) }

// ReadIn is Read from a /proc mounted at proc (a test's own).
func ReadIn(proc string, pid int) (Stat, error) {
	raw, err := os.ReadFile(proc + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return parse(pid, raw)
}

// All reads every process; one that ends while it reads is left out.
func All() []Stat {
	entries, _ := os.ReadDir("/proc")
	var out []Stat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := Read(pid); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// parse reads "pid (comm) state ppid pgrp ...": comm may hold spaces and
// parentheses, so the fields are counted from its last ')'.
func parse(pid int, raw []byte) (Stat, error) {
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return Stat{}, errors.New("/proc/" + strconv.Itoa(pid) + "/stat: no command name")
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return Stat{}, errors.New("/proc/" + strconv.Itoa(pid) + "/stat: too short")
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	if err := errors.Join(err1, err2); err != nil {
		return Stat{}, err
	}
	return Stat{Pid: pid, Ppid: ppid, Pgrp: pgrp, State: f[0][0]}, nil
}
