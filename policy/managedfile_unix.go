//go:build unix

package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// DefaultManagedPath is where the system's managed policy lives: read
// when it exists, whatever --managed says.
func DefaultManagedPath() string {
	if isDarwin {
		return "/Library/Application Support/aqlguard/managed.toml"
	}
	return "/etc/aqlguard/managed.toml"
}

// openManaged opens the managed file after checking it and every
// directory above it, on the path as given and as its links resolve, and
// checks the file it opened again (the same inode, not swapped between
// the check and the open).
func openManaged(path string) (*os.File, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	who := currentUser()
	for _, p := range []string{path, real} {
		if err := checkAncestors(p, who); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() {
		f.Close()
		return nil, &ManagedFileError{Path: path, Why: "it is not a regular file"}
	}
	if why := writableBy(statOf(st, false), who); why != "" {
		f.Close()
		return nil, &ManagedFileError{Path: path, Why: why}
	}
	return f, nil
}

// checkAncestors checks every directory above path (links in them as the
// kernel follows them: each is stat'ed, not lstat'ed).
func checkAncestors(path string, who user) error {
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		var st syscall.Stat_t
		if err := syscall.Stat(dir, &st); err != nil {
			return fmt.Errorf("the managed policy %s: %s: %w", path, dir, err)
		}
		if why := writableBy(statOf(&st, true), who); why != "" {
			return &ManagedFileError{Path: path, Why: "the directory " + dir + ": " + why}
		}
		if dir == filepath.Dir(dir) {
			return nil
		}
	}
}

func statOf(st *syscall.Stat_t, dir bool) fileStat {
	return fileStat{uid: int(st.Uid), gid: int(st.Gid), mode: uint32(st.Mode) & 0o7777, dir: dir}
}

func currentUser() user {
	groups, _ := os.Getgroups()
	return user{uid: os.Geteuid(), groups: append(groups, os.Getegid())}
}

// fileStat is what the check reads of a file or a directory.
type fileStat struct {
	uid, gid int
	mode     uint32 // permission bits, setuid, setgid and sticky
	dir      bool
}

// user is who runs aqlguard: its effective uid and groups.
type user struct {
	uid    int
	groups []int
}

// writableBy says why st may be written by someone it must not be (""
// when it cannot). Running as a user, that user must not be able to
// write it: not its owner, nor through a group or others' bits. Running
// as root, no one but root may: root owns it, and neither a group
// other than root's nor others may write. A sticky directory (/tmp) lets
// no one replace what another owns, so its write bits do not count.
func writableBy(st fileStat, who user) string {
	sticky := st.dir && st.mode&0o1000 != 0
	if who.uid == 0 {
		switch {
		case st.uid != 0:
			return fmt.Sprintf("it is owned by uid %d, not root", st.uid)
		case st.mode&0o020 != 0 && st.gid != 0 && !sticky:
			return fmt.Sprintf("group %d can write it", st.gid)
		case st.mode&0o002 != 0 && !sticky:
			return "everyone can write it"
		}
		return ""
	}
	switch {
	case st.uid == who.uid:
		return fmt.Sprintf("it is owned by uid %d, the user aqlguard runs as", st.uid)
	case st.mode&0o020 != 0 && slices.Contains(who.groups, st.gid) && !sticky:
		return fmt.Sprintf("group %d, one of the user's, can write it", st.gid)
	case st.mode&0o002 != 0 && !sticky:
		return "everyone can write it"
	}
	return ""
}
