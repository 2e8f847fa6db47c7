//go:build cpuprofile

package main

// Built only with -tags cpuprofile, for bench/: a whole serving process
// profiled from its start, where perf sees mostly the VM's system-call
// exits and few of Go's frames. AQLGUARD_CPUPROFILE names the file, to
// which the process id is added (serve and run fork a supervisor from
// the same binary, which profiles too); AQLGUARD_CPUPROFILE_SECONDS says
// how long to profile (default 10).

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"time"
)

func init() {
	path := os.Getenv("AQLGUARD_CPUPROFILE")
	if path == "" {
		return
	}
	seconds, err := strconv.Atoi(os.Getenv("AQLGUARD_CPUPROFILE_SECONDS"))
	if err != nil || seconds <= 0 {
		seconds = 10
	}
	f, err := os.Create(path + "." + strconv.Itoa(os.Getpid()))
	if err != nil {
		fmt.Fprintln(os.Stderr, "cpuprofile:", err)
		return
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "cpuprofile:", err)
		return
	}
	go func() {
		time.Sleep(time.Duration(seconds) * time.Second)
		pprof.StopCPUProfile()
		_ = f.Close()
	}()
}
