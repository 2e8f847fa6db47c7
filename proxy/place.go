package proxy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aqlguard/aqlguard/policy/paths"
)

// This file looks path arguments up on disk: policy/paths reads them
// lexically, and a symbolic link is where a lexical reading and the
// place a server reaches part. A link inside the roots that points at
// ~/.ssh must be judged as ~/.ssh.

// resolveWithin bounds the lookups of one path: a path on a hung
// network file system must not hang the call. Local lookups take
// microseconds; a file system that does not answer in this time is
// treated as one whose links are not known.
const resolveWithin = 250 * time.Millisecond

// maxStuck bounds the lookups left running after their time ran out (a
// stat on a hung file system cannot be cancelled, only abandoned): when
// that many are stuck, a path is not looked up at all, so a hung file
// system costs a bounded number of goroutines, not one per call. Lookups
// that answer in time are not counted: any number may run at once.
const maxStuck = 16

// stuck counts the lookups abandoned and not yet returned.
var stuck atomic.Int32

// maxLinks is how many symbolic links one path may pass through before
// it is taken for a loop (Linux's own bound).
const maxLinks = 40

// disk is the file system as the resolution sees it (a test's may hang).
type disk struct {
	lstat    func(string) (fs.FileInfo, error)
	readlink func(string) (string, error)
	// realpath, where the system has one (Linux), is where the kernel
	// takes an existing path, in a few system calls whatever its depth;
	// nil: every component is looked up in turn.
	realpath func(string) (string, error)
	// within bounds one path's lookups (resolveWithin when 0).
	within time.Duration
}

var osDisk = disk{lstat: os.Lstat, readlink: os.Readlink, realpath: kernelRealpath}

// errNoRealpath: the kernel could not name an open descriptor's path
// (no /proc); the components are then looked up in turn.
var errNoRealpath = errors.New("the kernel did not name the path")

// ResolvePlace is p with its symbolic links resolved where they
// resolve: Clean becomes the place a server reaches, each link followed
// (a dangling one to where it points: a write creates its target), the
// part that does not exist appended as written. A loop or a permission
// error leaves p as it was (the server meets the same error). A place
// that is not OK is returned as it is.
//
// A path whose `..` crosses a link names two places: the one a program
// that applies `..` first reaches (Node's path.resolve, the filesystem
// server) and the one the kernel reaches, applying `..` to where the
// link leads. When they differ, the place is not OK and Why names both,
// as it is when the lookups do not finish within resolveWithin.
func ResolvePlace(p paths.Place) paths.Place { return osDisk.resolvePlace(p) }

func (d disk) resolvePlace(p paths.Place) paths.Place {
	if !p.OK {
		return p
	}
	if r, ok := d.resolveInRecentDir(p); ok {
		return r
	}
	if stuck.Load() >= maxStuck {
		return unresolved(p, fmt.Sprintf("%d lookups of paths on disk are stuck (a file system that does not answer?)", maxStuck))
	}
	const running, returned, abandoned = 0, 1, 2
	var state atomic.Int32
	done := make(chan paths.Place, 1)
	go func() {
		r := d.resolve(p)
		if !state.CompareAndSwap(running, returned) {
			stuck.Add(-1) // abandoned, and back at last
		}
		done <- r
	}()
	within := d.within
	if within == 0 {
		within = resolveWithin
	}
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case r := <-done:
		return r
	case <-timer.C:
		if !state.CompareAndSwap(running, abandoned) {
			return <-done // it returned just now
		}
		stuck.Add(1)
		return unresolved(p, fmt.Sprintf("the file system did not answer within %v", within))
	}
}

// unresolved is p not OK because its links could not be looked up.
func unresolved(p paths.Place, why string) paths.Place {
	p.OK = false
	p.Why = "aqlguard could not look the path up on disk, so where its symbolic links lead is not known: " + why
	return p
}

func (d disk) resolve(p paths.Place) paths.Place {
	clean, found, ok := d.find(p.Clean)
	if !ok {
		return p
	}
	p.Looked, p.Exists = true, found
	if d.realpath != nil && !p.Climbs {
		// The directory, for the calls of the next second
		// (resolveInRecentDir).
		if dir, base := path.Split(p.Clean); dir != "" && base != "" {
			if cdir, ok := d.follow(path.Clean(dir)); ok {
				keepDir(dir, cdir)
			}
		}
	}
	if q := paths.Canonical(clean, "", ""); !q.OK || q.Clean != clean {
		p.OK = false
		p.Why = "the path leads through a symbolic link to a name aqlguard cannot show as it is: " + q.Why
		return p
	}
	if p.Climbs {
		kernel, ok := d.follow(p.Written)
		if ok && kernel != clean {
			p.OK = false
			p.Why = fmt.Sprintf("the path goes up (..) across a symbolic link: a program that applies .. first reaches %s, one that follows the link reaches %s", clean, kernel)
			return p
		}
	}
	p.Clean = clean
	return p
}

// follow is where the kernel takes the absolute path p: each component
// looked up in turn, a link replaced by its target, `..` applied to the
// directory reached so far. A component that does not exist, or is not
// a directory, is kept as written (and so is what follows it, links
// after a `..` included). ok is false for a loop or any other error.
func (d disk) follow(p string) (string, bool) {
	clean, _, ok := d.find(p)
	return clean, ok
}

// find is follow, and whether something is at the end of the path
// (found), from the same lookups.
func (d disk) find(p string) (clean string, found, ok bool) {
	start, rest := "/", p
	if d.realpath != nil {
		// The longest prefix that exists, as the kernel resolves it
		// (`..` included); the rest is walked from there, since a
		// dangling link in it leads somewhere all the same.
		prefix, tail := p, ""
		for {
			r, err := d.realpath(prefix)
			if err == nil {
				if tail == "" {
					return r, true, true // all of it exists
				}
				start, rest = r, tail
				break
			}
			if errors.Is(err, errNoRealpath) {
				break // the kernel would not say: walk it all
			}
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
				return p, false, false
			}
			i := strings.LastIndexByte(prefix, '/')
			if i <= 0 {
				break // not even / exists: walk it all
			}
			// Not path.Dir, which would apply a `..` lexically.
			prefix, tail = prefix[:i], prefix[i+1:]+"/"+tail
		}
	}
	return d.walk(start, rest)
}

// walk is find from cur, a directory already resolved, through the
// components of rest.
func (d disk) walk(cur, rest string) (clean string, found, ok bool) {
	todo := strings.Split(rest, "/")
	links := 0
	found = true // cur, so far
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		fi, err := d.lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			cur, found = next, false
		case err != nil:
			return rest, false, false
		case fi.Mode()&fs.ModeSymlink != 0:
			if links++; links > maxLinks {
				return rest, false, false
			}
			target, err := d.readlink(next)
			if err != nil || target == "" {
				return rest, false, false
			}
			if strings.HasPrefix(target, "/") {
				cur = "/"
			}
			todo = append(strings.Split(target, "/"), todo...)
		default:
			cur, found = next, true
		}
	}
	return cur, found, true
}

// ResolveRoots are roots (clean absolute paths) with their links
// resolved, each beside its resolved form, so that a path resolved by
// ResolvePlace is judged against what the roots name on disk (a root
// under /tmp is under /private/tmp on macOS). A root whose lookup fails
// or takes too long is kept as written.
func ResolveRoots(roots []string) []string {
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		out = append(out, r)
		p := ResolvePlace(paths.Place{Raw: r, Clean: r, Written: r, OK: true})
		if p.OK && p.Clean != r {
			out = append(out, p.Clean)
		}
	}
	return out
}

// A call's path is most often in a directory an earlier call of the last
// second resolved: its links are then taken as they were (dirsResolved),
// and only the last component is looked up, in place, since the file
// system answered for that directory a moment ago. A lookup costs a
// system call, and on a virtual machine a system call is a sizeable
// part of a guarded call's CPU (bench/RESULTS.md (af)). What the second
// costs: a directory replaced by a link within that second of an earlier
// call is read as it was; the lookup and the server's own use of a path
// are apart in time anyway.
const dirsResolvedFor = time.Second

// maxDirsResolved bounds the directories kept (a call of a new one when
// full starts the cache over).
const maxDirsResolved = 256

type dirResolved struct {
	clean string // the directory with its links followed
	until time.Time
}

var dirsResolved struct {
	sync.Mutex
	byDir map[string]dirResolved
}

// resolveInRecentDir resolves p from its directory's recent resolution;
// ok is false when there is none (or p climbs with "..", or its last
// component is a link: the whole lookup then runs, bounded).
func (d disk) resolveInRecentDir(p paths.Place) (paths.Place, bool) {
	if p.Climbs || d.realpath == nil {
		return p, false
	}
	dir, base := path.Split(p.Clean)
	if base == "" || dir == "" {
		return p, false
	}
	now := time.Now()
	dirsResolved.Lock()
	r, ok := dirsResolved.byDir[dir]
	dirsResolved.Unlock()
	if !ok || now.After(r.until) {
		return p, false
	}
	next := path.Join(r.clean, base)
	fi, err := d.lstat(next)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
	case err != nil:
		return p, false
	case fi.Mode()&fs.ModeSymlink != 0:
		return p, false
	}
	if q := paths.Canonical(next, "", ""); !q.OK || q.Clean != next {
		return p, false
	}
	p.Clean, p.Looked, p.Exists = next, true, err == nil
	return p, true
}

// keepDir keeps a directory's resolution for dirsResolvedFor.
func keepDir(dir, clean string) {
	dirsResolved.Lock()
	defer dirsResolved.Unlock()
	if dirsResolved.byDir == nil || len(dirsResolved.byDir) >= maxDirsResolved {
		dirsResolved.byDir = map[string]dirResolved{}
	}
	dirsResolved.byDir[dir] = dirResolved{clean: clean, until: time.Now().Add(dirsResolvedFor)}
}
