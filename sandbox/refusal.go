package sandbox

import (
	"bytes"
	"github.com/aqlguard/aqlguard/policy/paths"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A Refusal is a path or a TCP port a server was refused that its grant
// does not cover: what the sandbox refused, as far as the server's own
// words say (Landlock tells no one but the process refused).
type Refusal struct {
	Server string
	// Path is the place refused (clean, absolute); Port the TCP port,
	// when it was a connection.
	Path string
	Port uint16
	Addr string // the address as the server wrote it
	// Readable says the grant lets the server read Path, so it was a
	// write that was refused.
	Readable bool
	// Sensitive says why Path is a sensitive place (SSH keys, cloud
	// credentials: policy/paths' shipped list), "" when it is not. A
	// server's text can name any path: the client is never told how to
	// grant one of these.
	Sensitive string
	home      string // the server's, from its grant
}

// String says what was refused, in words.
func (r Refusal) String() string {
	if r.Path == "" {
		return "a connection to " + r.Addr + " (TCP port " + strconv.Itoa(int(r.Port)) + ")"
	}
	if r.Readable {
		return "writing " + r.Path
	}
	return r.Path
}

// Fix is the command that grants it: for a path not there (a file the
// server was making), the directory it would be in, which is what a
// grant can name (Landlock grants only what exists).
func (r Refusal) Fix() string {
	if r.Path == "" {
		return "aqlguard sandbox grant " + r.Server + " " + strconv.Itoa(int(r.Port))
	}
	p := r.grantable()
	if _, err := os.Lstat(r.Path); err == nil && !r.Readable {
		// A place that is there and was not readable: reading it is
		// the least grant that may do (a write refused after it says
		// so as "writing").
		return "aqlguard sandbox grant " + r.Server + " " + shellQuote(p) + " --read"
	}
	return "aqlguard sandbox grant " + r.Server + " " + shellQuote(p)
}

// grantable is Path when it is there, else its directory when that is
// there and is not the home or above it (a grant of which would be a
// grant of everything in it): what a grant can name.
func (r Refusal) grantable() string {
	if _, err := os.Lstat(r.Path); err == nil {
		return r.Path
	}
	dir := filepath.Dir(r.Path)
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() && dir != "/" && (r.home == "" || !within(r.home, dir)) {
		return dir
	}
	return r.Path
}

// Sentence is what the client is told. For a sensitive place it does
// not say how to grant it: the text that named the place is the
// server's, and a server that wants ~/.ssh should not get aqlguard's
// words to ask for it with.
func (r Refusal) Sentence() string {
	s := "aqlguard: the sandbox of the server " + r.Server + " refused " + r.String()
	if r.Sensitive != "" {
		return s + " (" + r.Sensitive + "): it is outside what its entry grants, and a server rarely needs it. aqlguard does not suggest granting it."
	}
	return s + ": it is outside what its entry grants. If the server needs it: " + r.Fix() +
		" (then restart the client), or add it to [servers.sandbox] in the config."
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-~+@:,", c))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// deniedWords are how runtimes say EACCES and EPERM: Node ("EACCES:
// permission denied, open '/x'", "connect EACCES 127.0.0.1:5432"),
// Python ("[Errno 13] Permission denied: '/x'"), Go ("open /x:
// permission denied"), shells ("cannot create /x: Permission denied").
var deniedWords = []string{"permission denied", "eacces", "eperm", "operation not permitted", "errno 13", "errno 1]"}

// deniedBytes are deniedWords as they are spelled in the text (a quick
// scan that needs no folding), for MentionsDenial.
var deniedBytes = [][]byte{[]byte("ermission denied"), []byte("ERMISSION DENIED"), []byte("EACCES"), []byte("eacces"), []byte("EPERM"), []byte("eperm"),
	[]byte("not permitted"), []byte("NOT PERMITTED"), []byte("rrno 13"), []byte("RRNO 13"), []byte("rrno 1]"), []byte("RRNO 1]")}

// MentionsDenial reports whether b may say something was denied: a
// cheap scan before a result is decoded and read (Refused).
func MentionsDenial(b []byte) bool {
	for _, w := range deniedBytes {
		if bytes.Contains(b, w) {
			return true
		}
	}
	return false
}

var (
	quotedPath = regexp.MustCompile(`['"\x60](/[^'"\x60]*)['"\x60]`)
	speaker    = regexp.MustCompile(`^\s*(/[^\s:]+):`)
	barePath   = regexp.MustCompile(`(?:^|[\s:(=,])(/[^\s'"\x60:,()]+)`)
	address    = regexp.MustCompile(`(?:^|[\s(/=,'"])(\d{1,3}(?:\.\d{1,3}){3}|\[[0-9A-Fa-f:.]+\]|localhost|[A-Za-z0-9][A-Za-z0-9.-]*\.[A-Za-z]{2,}):(\d{1,5})\b`)
)

// Refused reads text (a line of a server's stderr, or the text of a
// failed result) for places and ports it says were denied, and returns
// those g does not cover: the sandbox's refusals. A path the grant
// covers was refused by something else (the file's own permissions).
func Refused(text string, g Grant) []Refusal {
	if g.Off {
		return nil
	}
	var out []Refusal
	for _, line := range strings.Split(text, "\n") {
		low := strings.ToLower(line)
		denied := false
		for _, w := range deniedWords {
			if strings.Contains(low, w) {
				denied = true
				break
			}
		}
		if !denied {
			continue
		}
		seen := map[string]bool{}
		// "/bin/sh: 1: cannot create /x: Permission denied": the first
		// path is the program that speaks, not one it was refused.
		if m := speaker.FindStringSubmatch(line); m != nil {
			seen[filepath.Clean(m[1])] = true
		}
		for _, re := range []*regexp.Regexp{quotedPath, barePath} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				p := filepath.Clean(m[1])
				if seen[p] || p == "/" || strings.HasPrefix(p, "/dev/") || g.CanWrite(p) {
					continue
				}
				seen[p] = true
				r := Refusal{Server: g.Server, Path: p, Readable: g.CanRead(p), home: g.Home}
				if sens, ok := paths.ShippedList().Match(p, g.Home); ok {
					r.Sensitive = sens.Reason
				}
				out = append(out, r)
			}
		}
		for _, m := range address.FindAllStringSubmatch(line, -1) {
			n, err := strconv.ParseUint(m[2], 10, 16)
			if err != nil || n == 0 || g.CanConnect(uint16(n)) || seen[m[0]] {
				continue
			}
			seen[m[0]] = true
			out = append(out, Refusal{Server: g.Server, Port: uint16(n), Addr: m[1] + ":" + m[2]})
		}
	}
	return out
}

// Watch keeps a running server's refusals: each place once, with when
// it was first seen, so a failed call can be told of those seen while it
// ran.
type Watch struct {
	Grant Grant
	mu    sync.Mutex
	seen  map[string]time.Time
	order []Refusal
	// full says maxRefusals were seen: a server's stderr is its own to
	// write, and one that names a new path on every line must not fill
	// the audit log.
	full, told bool
}

// maxRefusals bounds the refusals one server process has logged and
// recorded.
const maxRefusals = 64

// NewWatch watches a server confined to g.
func NewWatch(g Grant) *Watch { return &Watch{Grant: g, seen: map[string]time.Time{}} }

// Read reads text for refusals: all it names, and those of them not
// seen before (which are the ones to log and record).
func (w *Watch) Read(text string) (all, fresh []Refusal) {
	if w == nil {
		return nil, nil
	}
	all = Refused(text, w.Grant)
	if len(all) == 0 {
		return nil, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range all {
		k := r.String()
		if _, ok := w.seen[k]; ok {
			continue
		}
		if len(w.order) >= maxRefusals {
			w.full = true
			break
		}
		w.seen[k] = time.Now()
		w.order = append(w.order, r)
		fresh = append(fresh, r)
	}
	return all, fresh
}

// Full reports, once, that the watch has recorded as many refusals as
// it will: the caller says so, and later ones are only in the failed
// results that name them.
func (w *Watch) Full() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.full && !w.told {
		w.told = true
		return true
	}
	return false
}

// Since are the refusals first seen at or after t.
func (w *Watch) Since(t time.Time) []Refusal {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Refusal
	for _, r := range w.order {
		if !w.seen[r.String()].Before(t) {
			out = append(out, r)
		}
	}
	return out
}
