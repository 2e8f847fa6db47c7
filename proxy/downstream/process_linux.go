package downstream

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// setParentDeathSignal has the kernel send sig to the child when the
// thread that started it dies, however its process dies (Go does not end
// the threads it made).
func setParentDeathSignal(a *syscall.SysProcAttr, sig syscall.Signal) { a.Pdeathsig = sig }

// becomeSubreaper makes this process the parent of its orphaned
// descendants, so that it can end them; it reports whether it is one.
func becomeSubreaper() bool { return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == nil }

// nonDumpable keeps other processes of the same user (a server among
// them) out of the supervisor's /proc/PID/environ and memory, where the
// environment it hands to the serving aqlguard (AQLGUARD_SERVE_TOKEN)
// stays for as long as it runs.
func nonDumpable() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }

// watchParent: the supervisor started this process with a parent death
// signal.
func watchParent(int) {}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// releaseCleanPages takes this process's clean read-only file pages
// (the binary's code and constants, shared libraries) out of its
// resident set. A supervisor touched much of this large binary starting
// up and needs little of it to wait: what it runs again is read back
// from the page cache (where the supervised aqlguard keeps it anyway).
// Only mappings with no page of their own are released: writable ones,
// and read-only ones written before they were made read-only (the
// dynamic loader's relocations), would lose what was written.
func releaseCleanPages() {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return
	}
	defer f.Close()
	var start, end uint64
	candidate := false
	release := func() {
		if candidate {
			_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), uintptr(unix.MADV_DONTNEED))
		}
		candidate = false
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && len(fields) >= 5 {
			// A mapping's header: start-end perms offset dev inode [path].
			release()
			var err1, err2 error
			start, err1 = strconv.ParseUint(lo, 16, 64)
			end, err2 = strconv.ParseUint(hi, 16, 64)
			candidate = err1 == nil && err2 == nil && end > start && len(fields) >= 6 &&
				strings.HasPrefix(fields[5], "/") && fields[1][0] == 'r' && fields[1][1] != 'w'
			continue
		}
		if fields[0] == "Anonymous:" && (len(fields) < 2 || fields[1] != "0") {
			candidate = false // pages of its own: written once
		}
	}
	release()
}
