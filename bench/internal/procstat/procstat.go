// Package procstat reads every process's /proc/PID/stat (Linux), for
// benchmarks that find a proxy's processes or sum the CPU they used.
package procstat

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// Proc is one process as /proc/PID/stat shows it.
type Proc struct {
	Pid, Ppid int
	Name      string  // the command name (comm), as ps -e shows it
	CPU       float64 // user+system seconds used so far
}

// clockTicks is USER_HZ, the unit of the stat file's times: 100 on every
// Linux (the kernel ABI fixes it for /proc).
const clockTicks = 100

// All reads every process; one that ends while it reads is left out.
func All() []Proc {
	entries, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime stime: comm may hold spaces and
		// parentheses, so the fields are counted from its last ')'.
		open, end := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(string(raw[end+1:]))
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		utime, _ := strconv.ParseFloat(f[11], 64)
		stime, _ := strconv.ParseFloat(f[12], 64)
		out = append(out, Proc{Pid: pid, Ppid: ppid, Name: string(raw[open+1 : end]), CPU: (utime + stime) / clockTicks})
	}
	return out
}
