package proxy

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// kernelRealpath is where the kernel takes an existing path: the path
// of a descriptor opened on it without reading it (O_PATH), as
// /proc/self/fd names it. Three system calls, where looking each
// component up costs one per directory.
func kernelRealpath(p string) (string, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var buf [unix.PathMax]byte
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf[:])
	if err != nil {
		return "", errNoRealpath // no /proc: a lookup error, not a missing file
	}
	r := string(buf[:n])
	if n == len(buf) || !strings.HasPrefix(r, "/") || strings.HasSuffix(r, " (deleted)") {
		return "", errNoRealpath
	}
	return r, nil
}
