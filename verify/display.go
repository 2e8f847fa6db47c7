package verify

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// Where dialogs go. A client that starts aqlguard with a minimal
// environment (the TypeScript SDK's StdioClientTransport passes HOME,
// LOGNAME, PATH, SHELL, TERM and USER, and nothing else; so do the MCP
// Inspector and many clients built on it) leaves aqlguard without
// DISPLAY, WAYLAND_DISPLAY and DBUS_SESSION_BUS_ADDRESS, although the
// person sits in front of a graphical session. The dialog channel then
// finds that session itself (FindDisplay), in this order:
//
//  1. aqlguard's own environment, as it was given; DISPLAY or
//     WAYLAND_DISPLAY set there to "" says there is no display, and
//     nothing is looked for (a client entry's "env": {"DISPLAY": ""});
//  2. the environment of the processes that started it, nearest first
//     (the client itself: Claude Desktop, Cursor, the Inspector's node),
//     as long as they run as this user; a display they name is checked
//     to answer before it is taken;
//  3. the sockets of this user's own session: a Wayland socket in
//     /run/user/UID (a directory only this user can enter), an X socket
//     in /tmp/.X11-unix that this user owns, with the session bus
//     beside them; exactly one session, or none is taken.
//
// Another user's display is never taken: a process of another user is
// not read, and a socket is taken only when this user owns it (root's
// own sockets are not scanned, since a system X server's socket is
// root's whoever sits at it). Several sessions of this user are not
// guessed between. Only the variables of displayVars are taken from a
// process, never anything else of its environment.

// displayVars are the variables that say where a graphical session is
// and how to reach it, taken together from one place.
var displayVars = []string{"DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "XAUTHORITY",
	"GDK_BACKEND", "NO_AT_BRIDGE"}

// Display is the graphical session dialogs are put on: the variables
// the dialog program is given, and where they were found.
type Display struct {
	// Vars are the displayVars found, by name ("" values left out).
	Vars map[string]string
	// From says where they were found, in words: "aqlguard's own
	// environment", "the environment of node (pid 4242), which started
	// aqlguard", "this user's session sockets".
	From string
}

// Where is the display in a few words: "DISPLAY=:0",
// "WAYLAND_DISPLAY=wayland-0, DISPLAY=:0".
func (d Display) Where() string {
	var parts []string
	for _, name := range []string{"WAYLAND_DISPLAY", "DISPLAY"} {
		if v := d.Vars[name]; v != "" {
			parts = append(parts, name+"="+v)
		}
	}
	if len(parts) == 0 {
		return "no display"
	}
	return strings.Join(parts, ", ")
}

// wayland reports whether the display is a Wayland session.
func (d Display) wayland() bool { return d.Vars["WAYLAND_DISPLAY"] != "" }

// env is base with the display's variables in place of base's own.
func (d Display) env(base []string) []string {
	out := make([]string, 0, len(base)+len(d.Vars))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(displayVars, name) {
			out = append(out, kv)
		}
	}
	for _, name := range displayVars {
		if v := d.Vars[name]; v != "" {
			out = append(out, name+"="+v)
		}
	}
	return out
}

// ownDisplay is the display aqlguard's own environment names: ok when
// it names one; err (ErrNoDisplay) when it sets DISPLAY or
// WAYLAND_DISPLAY to "" and names none, which says not to look further.
func ownDisplay(lookup func(string) (string, bool)) (d Display, ok bool, err error) {
	x, xSet := lookup("DISPLAY")
	w, wSet := lookup("WAYLAND_DISPLAY")
	if x == "" && w == "" {
		if xSet || wSet {
			return Display{}, false, noDisplay("aqlguard's environment sets DISPLAY or WAYLAND_DISPLAY to \"\", which says there is none, so none is looked for")
		}
		return Display{}, false, nil
	}
	vars := map[string]string{}
	for _, name := range displayVars {
		if v, _ := lookup(name); v != "" {
			vars[name] = v
		}
	}
	return Display{Vars: vars, From: "aqlguard's own environment"}, true, nil
}

// FindDisplay finds the graphical session dialogs are put on (see the
// comment at the top of this file). Its error wraps ErrNoDisplay and
// says where it looked.
func FindDisplay() (Display, error) {
	d, ok, err := ownDisplay(os.LookupEnv)
	switch {
	case ok:
		return d, nil
	case err != nil:
		return Display{}, err
	}
	return findOtherDisplay()
}

// noDisplay is ErrNoDisplay with where it was looked for.
func noDisplay(looked string) error {
	return fmt.Errorf("%w; %s", ErrNoDisplay, looked)
}
