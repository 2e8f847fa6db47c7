package proxy

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/policy/paths"
)

// tree makes a home directory with ~/.ssh and a project root in it, and
// the links a hostile or careless project may hold; paths are real
// (t.TempDir's own links resolved).
func tree(t *testing.T) (home, proj string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home = filepath.Join(base, "home")
	proj = filepath.Join(home, "proj")
	for _, d := range []string{filepath.Join(home, ".ssh"), filepath.Join(proj, "src"), filepath.Join(base, "deep", "dir")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"keys":     filepath.Join(home, ".ssh"),               // absolute, to a directory
		"key":      "../.ssh/id_rsa",                          // relative, to a file
		"newkey":   filepath.Join(home, ".ssh", "authorized"), // dangling: a write creates the target
		"srclink":  "src",                                     // inside the root
		"deeplink": filepath.Join(base, "deep", "dir"),        // `..` after it is elsewhere
		"loop1":    "loop2",
		"loop2":    "loop1",
		"chain":    "keys",
	} {
		if err := os.Symlink(target, filepath.Join(proj, link)); err != nil {
			t.Fatal(err)
		}
	}
	return home, proj
}

// disks are the ways a path is looked up: the kernel's realpath where
// it has one, each component in turn, and the walk when /proc does not
// name descriptors.
var disks = []struct {
	name string
	d    disk
}{
	{"realpath", osDisk},
	{"walk", disk{lstat: os.Lstat, readlink: os.Readlink}},
	{"no /proc", disk{lstat: os.Lstat, readlink: os.Readlink, realpath: func(string) (string, error) { return "", errNoRealpath }}},
}

func TestResolvePlace(t *testing.T) {
	home, proj := tree(t)
	base := filepath.Dir(home)
	for _, tc := range []struct {
		raw, want string
		sensitive bool
		why       string // part of Why when not OK
	}{
		{raw: "src/main.go", want: proj + "/src/main.go"},
		{raw: "srclink/main.go", want: proj + "/src/main.go"},
		{raw: "keys/id_rsa", want: home + "/.ssh/id_rsa", sensitive: true},
		{raw: "keys", want: home + "/.ssh", sensitive: true},
		{raw: "key", want: home + "/.ssh/id_rsa", sensitive: true},
		{raw: "chain/config", want: home + "/.ssh/config", sensitive: true},
		{raw: "newkey", want: home + "/.ssh/authorized", sensitive: true},
		{raw: "missing/a/b.txt", want: proj + "/missing/a/b.txt"},
		{raw: "src/main.go/x", want: proj + "/src/main.go/x"},
		{raw: "loop1/x", want: proj + "/loop1/x"}, // a loop: left as it was
		{raw: "src/../srclink/x", want: proj + "/src/x"},
		{raw: "deeplink/../x", why: "across a symbolic link"},
		{raw: "deeplink/../../deep/dir/../x", why: "across a symbolic link"},
		{raw: "../proj/src", want: proj + "/src"},
		{raw: base + "/deep/dir/../dir", want: base + "/deep/dir"},
	} {
		for _, d := range disks {
			tc, p := tc, d.d.resolvePlace(paths.Canonical(tc.raw, home, proj))
			tc.raw = d.name + ": " + tc.raw
			if tc.why != "" {
				if p.OK || !strings.Contains(p.Why, tc.why) {
					t.Errorf("ResolvePlace(%q) = %+v; want not OK because %q", tc.raw, p, tc.why)
				}
				continue
			}
			if !p.OK || p.Clean != tc.want {
				t.Errorf("ResolvePlace(%q) = %+v; want %q", tc.raw, p, tc.want)
				continue
			}
			if _, ok := paths.Match(paths.Shipped, p.Clean, home); ok != tc.sensitive {
				t.Errorf("ResolvePlace(%q) = %q: sensitive %v, want %v", tc.raw, p.Clean, ok, tc.sensitive)
			}
		}
	}
	// Not OK stays as it is, with its reason.
	bad := paths.Canonical("", home, proj)
	if got := ResolvePlace(bad); got != bad {
		t.Errorf("ResolvePlace(not OK) = %+v", got)
	}
}

// A directory the lookup may not enter leaves the path as it was.
func TestResolvePlacePermission(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root enters every directory")
	}
	home, proj := tree(t)
	locked := filepath.Join(proj, "locked")
	if err := os.Mkdir(locked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(locked, "keys")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(locked, 0o755) })
	p := ResolvePlace(paths.Canonical("locked/keys/id_rsa", home, proj))
	if !p.OK || p.Clean != locked+"/keys/id_rsa" {
		t.Errorf("ResolvePlace through a locked directory = %+v; want it as it was", p)
	}
}

// A file system that does not answer costs the call its bound, not
// forever, and a bounded number of lookups left behind: past maxStuck,
// a path is not looked up at all. Either way the place is not OK: where
// its links lead is not known.
func TestResolvePlaceHungFileSystem(t *testing.T) {
	release := make(chan struct{})
	hung := disk{lstat: func(name string) (fs.FileInfo, error) {
		<-release
		return os.Lstat(name)
	}, readlink: os.Readlink, within: 20 * time.Millisecond}
	t.Cleanup(func() {
		// The file system answers again: the lookups left behind end.
		close(release)
		for deadline := time.Now().Add(10 * time.Second); stuck.Load() > 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("%d lookups still stuck after the file system answered", stuck.Load())
				break
			}
		}
	})
	for i := range maxStuck + 2 {
		start := time.Now()
		p := hung.resolvePlace(paths.Canonical("/srv/nfs/x", "", ""))
		took := time.Since(start)
		if p.OK || !strings.Contains(p.Why, "could not look the path up") {
			t.Fatalf("lookup %d on a hung file system = %+v; want not OK", i, p)
		}
		if took > hung.within+2*time.Second {
			t.Fatalf("lookup %d took %v", i, took)
		}
		// "stuck" is said before any lookup starts: refused at once.
		if i >= maxStuck && !strings.Contains(p.Why, "stuck") {
			t.Fatalf("lookup %d past %d stuck ones = %+v after %v; want refused at once", i, maxStuck, p, took)
		}
	}
	if n := stuck.Load(); n != maxStuck {
		t.Errorf("%d lookups stuck, want %d", n, maxStuck)
	}
}

func TestResolveRoots(t *testing.T) {
	home, proj := tree(t)
	link := filepath.Join(home, "work")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	got := ResolveRoots([]string{link, proj, "/does/not/exist"})
	want := []string{link, proj, proj, "/does/not/exist"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("ResolveRoots = %q, want %q", got, want)
	}
	p := ResolvePlace(paths.Canonical(link+"/src/main.go", home, proj))
	if !paths.Within(p.Clean, got) {
		t.Errorf("a path through a linked root (%q) is outside its roots %q", p.Clean, got)
	}
}

// BenchmarkResolvePlace: what looking a path argument up costs a call
// (a file four directories into a project).
func BenchmarkResolvePlace(b *testing.B) {
	base, _ := filepath.EvalSymlinks(b.TempDir())
	dir := filepath.Join(base, "home", "u", "proj", "src", "pkg")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	p := paths.Canonical(filepath.Join(dir, "main.go"), "", "")
	b.ReportAllocs()
	for b.Loop() {
		ResolvePlace(p)
	}
}

// Many calls at once look their paths up at once: only lookups that ran
// out of time count against maxStuck.
func TestResolvePlaceConcurrent(t *testing.T) {
	home, proj := tree(t)
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for range 100 {
		wg.Go(func() {
			if p := ResolvePlace(paths.Canonical("keys/id_rsa", home, proj)); !p.OK || p.Clean != home+"/.ssh/id_rsa" {
				errs <- p.Clean + ": " + p.Why
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestResolveInRecentDir: a path in a directory resolved a moment ago
// is resolved from it, a link as its last component is still followed,
// and a link through the directory is what it was when it was resolved.
func TestResolveInRecentDir(t *testing.T) {
	dir, secret := t.TempDir(), t.TempDir()
	writeTemp := func(p string) {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeTemp(filepath.Join(dir, "a.txt"))
	writeTemp(filepath.Join(secret, "id_rsa"))
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	first := ResolvePlace(paths.Canonical(filepath.Join(dir, "a.txt"), "/", "/"))
	if !first.OK || first.Clean != filepath.Join(real, "a.txt") {
		t.Fatalf("first: %+v", first)
	}
	// The directory is kept: a new file in it, and a link in it.
	if got := ResolvePlace(paths.Canonical(filepath.Join(dir, "new.txt"), "/", "/")); !got.OK || got.Clean != filepath.Join(real, "new.txt") {
		t.Errorf("a new file in a recent directory: %+v", got)
	}
	if err := os.Symlink(filepath.Join(secret, "id_rsa"), filepath.Join(dir, "key")); err != nil {
		t.Fatal(err)
	}
	realSecret, _ := filepath.EvalSymlinks(secret)
	if got := ResolvePlace(paths.Canonical(filepath.Join(dir, "key"), "/", "/")); !got.OK || got.Clean != filepath.Join(realSecret, "id_rsa") {
		t.Errorf("a link as the last component in a recent directory is not followed: %+v", got)
	}
}

// What is at a place when the call is read is said to the human
// ("create the new file", "overwrite"), from the lookups that resolve
// it, by every way of looking it up (issue 31, item 4).
func TestResolvePlaceSaysWhatIsThere(t *testing.T) {
	home, proj := tree(t)
	if err := os.WriteFile(filepath.Join(proj, "src", "a.go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path   string
		exists bool
	}{
		{filepath.Join(proj, "src", "a.go"), true},
		{filepath.Join(proj, "src", "new.go"), false},
		{filepath.Join(proj, "nodir", "new.go"), false},
		{filepath.Join(proj, "key"), true},     // a link to a file that is there
		{filepath.Join(proj, "newkey"), false}, // a dangling link: a write creates its target
		{filepath.Join(proj, "srclink", "a.go"), true},
		{filepath.Join(home, ".ssh"), true},
	} {
		for _, dk := range disks {
			for range 2 { // the second time from its directory's recent lookup
				p := dk.d.resolvePlace(paths.Canonical(tc.path, home, proj))
				if !p.OK || !p.Looked || p.Exists != tc.exists {
					t.Errorf("%s (%s): OK %v, looked %v, exists %v; want exists %v", tc.path, dk.name, p.OK, p.Looked, p.Exists, tc.exists)
				}
			}
		}
	}
	if p := paths.Canonical(filepath.Join(proj, "src", "a.go"), home, proj); p.Looked || p.Exists {
		t.Error("a lexical reading says what is on disk")
	}
}
