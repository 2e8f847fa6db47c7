//go:build unix

package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives f the owner and group of like.
func keepOwner(f *os.File, like fs.FileInfo) error {
	st, ok := like.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if int(st.Uid) == os.Geteuid() && int(st.Gid) == os.Getegid() {
		return nil // a new file of ours has them already
	}
	if err := f.Chown(int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("the file is owned by uid %d gid %d, which the new one cannot keep: %w", st.Uid, st.Gid, err)
	}
	return nil
}
