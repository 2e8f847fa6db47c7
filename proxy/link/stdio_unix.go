//go:build unix

package link

import (
	"os"

	"golang.org/x/sys/unix"
)

// Pollable returns a file on f's descriptor that the runtime reads and
// writes through its poller, for a pipe or a socket: O_NONBLOCK is set on
// the descriptor, and a duplicate of it becomes a file the poller
// watches. restore closes the duplicate and puts the flag back (the
// descriptor's open file is shared with whoever passed it: a client, a
// supervisor). A terminal, a regular file or /dev/null is returned as it
// is (a terminal shared with a shell must not be left non-blocking).
//
// Why: a goroutine blocked in read(2) on a blocking descriptor holds its
// thread, and Go 1.26's runtime can lose the race between entering that
// read and a stop-the-world (the GC's) that began a moment before: the P
// is not retaken, and every goroutine of the process waits until a byte
// arrives (docs/design.md, "No thread blocked on a pipe"). Through the
// poller the goroutine parks instead, and nothing waits for it.
func Pollable(f *os.File) (p *os.File, restore func(), err error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return f, func() {}, nil
	}
	var fd int
	if err := raw.Control(func(u uintptr) { fd = int(u) }); err != nil {
		return f, func() {}, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, nil, err
	}
	if kind := st.Mode & unix.S_IFMT; kind != unix.S_IFIFO && kind != unix.S_IFSOCK {
		return f, func() {}, nil
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return nil, nil, err
	}
	wasBlocking := flags&unix.O_NONBLOCK == 0
	if wasBlocking {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags|unix.O_NONBLOCK); err != nil {
			return nil, nil, err
		}
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	p = os.NewFile(uintptr(dup), f.Name()) // non-blocking: on the poller
	return p, func() {
		_ = p.Close()
		if wasBlocking {
			if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
				_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
			}
		}
	}, nil
}
