package main

import (
	"io"
	"os"
)

// writesToTerminal reports whether w is a terminal a person reads, not a
// file, a pipe or /dev/null (which a character-device test takes for
// one): the terminal answers the termios request (isTTY).
func writesToTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTTY(f)
}
