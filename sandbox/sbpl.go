package sandbox

import (
	"fmt"
	"strings"
)

// macSystemRead are the places of macOS every program reads: the system,
// its frameworks and libraries, Homebrew's and /usr/local's programs.
var macSystemRead = []string{"/System", "/Library", "/usr", "/bin", "/sbin", "/opt/homebrew", "/private/etc", "/private/var/db/timezone", "/dev"}

// SBPL is g as a sandbox-exec(1) profile (Seatbelt's profile language):
// everything denied but what a program needs of the system to run and
// what g grants. Paths must be real ones (macOS's /tmp is /private/tmp):
// the launcher resolves them. Reading a file's metadata (stat) is
// allowed everywhere, as node and Python walk up directories looking for
// their packages; reading a file's content is not.
func SBPL(g Grant) string {
	var b strings.Builder
	b.WriteString("(version 1)\n")
	fmt.Fprintf(&b, "; aqlguard's sandbox of the server %s\n", sbplComment(g.Server))
	if g.Off {
		b.WriteString("(allow default)\n")
		return b.String()
	}
	b.WriteString(`(deny default)
(allow process-fork)
(allow process-info* (target same-sandbox))
(allow signal (target same-sandbox))
(allow sysctl-read)
(allow mach-lookup)
(allow ipc-posix-shm)
(allow ipc-posix-sem)
(allow file-read-metadata)
(allow file-ioctl (literal "/dev/null") (literal "/dev/tty"))
`)
	read := append(append([]string{}, macSystemRead...), g.Read...)
	b.WriteString("(allow file-read* process-exec\n")
	for _, p := range read {
		fmt.Fprintf(&b, "    (subpath %s)\n", sbplString(p))
	}
	b.WriteString(")\n")
	if len(g.Write) > 0 {
		b.WriteString("(allow file-read* file-write* process-exec\n")
		for _, p := range g.Write {
			fmt.Fprintf(&b, "    (subpath %s)\n", sbplString(p))
		}
		b.WriteString(")\n")
	}
	b.WriteString("(allow file-write-data (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/tty\"))\n")
	switch g.Network {
	case NetAny:
		b.WriteString("(allow network*)\n")
	case NetNone:
		b.WriteString("; network: none\n")
	default:
		if len(g.Connect) > 0 {
			b.WriteString("(allow network-outbound\n")
			for _, p := range g.Connect {
				fmt.Fprintf(&b, "    (remote tcp \"*:%d\")\n", p)
			}
			b.WriteString(")\n")
		}
		for _, p := range g.Bind {
			fmt.Fprintf(&b, "(allow network-bind network-inbound (local tcp \"*:%d\"))\n", p)
		}
	}
	// Name resolution on macOS asks mDNSResponder over its unix socket.
	if g.Network != NetNone {
		b.WriteString("(allow network-outbound (literal \"/private/var/run/mDNSResponder\"))\n")
	}
	return b.String()
}

// sbplString quotes s as an SBPL string literal.
func sbplString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\x00", "")
	return `"` + r.Replace(s) + `"`
}

// sbplComment keeps a comment on its line.
func sbplComment(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
}
