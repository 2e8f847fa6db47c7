package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Network is what a grant lets a server do with TCP.
type Network string

const (
	// NetPorts: connect to the listed ports only (on any host: Landlock's
	// rules are by port), listen on the listed bind ports only.
	NetPorts Network = "ports"
	// NetNone: no TCP connection and no listening socket.
	NetNone Network = "none"
	// NetAny: no network rule.
	NetAny Network = "any"
)

// Grant is what one server may touch: the places it may read (and
// execute), those it may also write, and its network. Paths are clean
// and absolute. The zero Grant with Off false confines to nothing but the
// system: Derive fills one from a server's entry.
type Grant struct {
	Server string
	// Home is the server's home directory ("~" in what it is told).
	Home string
	// Off says the server runs unconfined ([servers.sandbox] mode = "off").
	Off bool
	// Read are places the server may read and execute; Write those it may
	// also create, change and delete in.
	Read  []string
	Write []string
	// TempDir is the server's private temporary directory (TMPDIR), in
	// Write; made at launch ("" until then).
	TempDir string
	// Create are places of Write that Prepare makes when they are not
	// there: directories (the runtime's caches), and files with a dot in
	// their name (a log its arguments name in the home).
	Create  []string
	Network Network
	Connect []uint16
	Bind    []uint16
	// Notes say what the derivation left out of the grant and why (an
	// argument naming the whole home), for the log and doctor.
	Notes []string
	// Profile names the shipped profile whose needs were added ("" none).
	Profile string
}

// add puts p in list unless it is there already.
func add(list []string, p string) []string {
	if p == "" || slices.Contains(list, p) {
		return list
	}
	return append(list, p)
}

// normalize sorts the grant's places and ports and drops what another
// place of the grant already covers: a read place under a write place,
// a place under another of the same kind.
func (g *Grant) normalize() {
	g.Write = minimal(g.Write, nil)
	g.Read = minimal(g.Read, g.Write)
	slices.Sort(g.Connect)
	g.Connect = slices.Compact(g.Connect)
	slices.Sort(g.Bind)
	g.Bind = slices.Compact(g.Bind)
}

// minimal is list sorted, without the places under another of list or
// of wider.
func minimal(list, wider []string) []string {
	out := make([]string, 0, len(list))
	for _, p := range list {
		if covered(p, wider) {
			continue
		}
		keep := true
		for _, q := range list {
			if q != p && within(p, q) {
				keep = false
				break
			}
		}
		if keep {
			out = add(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// within reports whether p is dir or under it.
func within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// covered reports whether p is within one of dirs.
func covered(p string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return within(p, d) })
}

// CanRead reports whether the grant lets the server read p (a clean
// absolute path).
func (g Grant) CanRead(p string) bool {
	return g.Off || covered(p, g.Read) || covered(p, g.Write)
}

// CanWrite reports whether the grant lets the server write p.
func (g Grant) CanWrite(p string) bool { return g.Off || covered(p, g.Write) }

// CanConnect reports whether the grant lets the server connect to a TCP
// port.
func (g Grant) CanConnect(port uint16) bool {
	switch {
	case g.Off || g.Network == NetAny:
		return true
	case g.Network == NetNone:
		return false
	}
	return slices.Contains(g.Connect, port)
}

// Summary is the grant in one line, for the log, doctor and the audit
// record of a server's start.
func (g Grant) Summary() string {
	if g.Off {
		return "off: unconfined"
	}
	return fmt.Sprintf("read %s; write %s; network %s", own(g.Read), own(g.Write), g.networkText())
}

// own says the places of ps beyond the system's every server is given
// (systemRead, etcRead, devWrite), which a summary does not list.
func own(ps []string) string {
	var out []string
	for _, p := range ps {
		if !slices.Contains(systemRead, p) && !slices.Contains(etcRead, p) && !slices.Contains(devWrite, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return "only the system's"
	}
	return "the system's and " + strings.Join(out, " ")
}

func (g Grant) networkText() string {
	switch g.Network {
	case NetAny:
		return "any"
	case NetNone:
		return "none"
	}
	s := "tcp connect " + ports(g.Connect)
	if len(g.Bind) > 0 {
		s += ", listen " + ports(g.Bind)
	}
	return s
}

func ports(ps []uint16) string {
	if len(ps) == 0 {
		return "(none)"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}

// clean makes p absolute and clean, "~" and "~/..." in home, relative
// ones in dir; "" when it cannot (a relative path with no dir, "~" with
// no home).
func clean(p, home, dir string) string {
	switch {
	case p == "":
		return ""
	case p == "~" || strings.HasPrefix(p, "~/"):
		if home == "" {
			return ""
		}
		return filepath.Join(home, p[1:])
	case filepath.IsAbs(p):
		return filepath.Clean(p)
	case dir == "":
		return ""
	}
	return filepath.Join(dir, p)
}
