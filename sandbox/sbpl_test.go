package sandbox

import (
	"strings"
	"testing"
)

// TestSBPL: the macOS profile says, in Seatbelt's language, what the
// grant says: deny by default, the system and the grant's places to
// read, its write places, its TCP ports; strings quoted so a path cannot
// end one and start a rule of its own.
func TestSBPL(t *testing.T) {
	g := Grant{Server: "fs\n(allow default)", Read: []string{"/Users/a/code/srv"}, Write: []string{`/Users/a/notes "x")(allow default`, "/private/tmp/aqlguard-fs-1"},
		Network: NetPorts, Connect: []uint16{443, 53}, Bind: []uint16{8080}}
	got := SBPL(g)
	want := `(version 1)
; aqlguard's sandbox of the server fs (allow default)
(deny default)
(allow process-fork)
(allow process-info* (target same-sandbox))
(allow signal (target same-sandbox))
(allow sysctl-read)
(allow mach-lookup)
(allow ipc-posix-shm)
(allow ipc-posix-sem)
(allow file-read-metadata)
(allow file-ioctl (literal "/dev/null") (literal "/dev/tty"))
(allow file-read* process-exec
    (subpath "/System")
    (subpath "/Library")
    (subpath "/usr")
    (subpath "/bin")
    (subpath "/sbin")
    (subpath "/opt/homebrew")
    (subpath "/private/etc")
    (subpath "/private/var/db/timezone")
    (subpath "/dev")
    (subpath "/Users/a/code/srv")
)
(allow file-read* file-write* process-exec
    (subpath "/Users/a/notes \"x\")(allow default")
    (subpath "/private/tmp/aqlguard-fs-1")
)
(allow file-write-data (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty"))
(allow network-outbound
    (remote tcp "*:443")
    (remote tcp "*:53")
)
(allow network-bind network-inbound (local tcp "*:8080"))
(allow network-outbound (literal "/private/var/run/mDNSResponder"))
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if n := strings.Count(got, "\n(allow default)"); n != 0 { // in a comment or a quoted path only, never a rule
		t.Errorf("a line (allow default) %d times", n)
	}
	if s := SBPL(Grant{Network: NetAny}); !strings.Contains(s, "(allow network*)") {
		t.Errorf("network any:\n%s", s)
	}
	if s := SBPL(Grant{Network: NetNone}); strings.Contains(s, "network-outbound") || strings.Contains(s, "network*") {
		t.Errorf("network none:\n%s", s)
	}
	if s := SBPL(Grant{Off: true}); !strings.Contains(s, "(allow default)") || strings.Contains(s, "(deny default)") {
		t.Errorf("off:\n%s", s)
	}
}
