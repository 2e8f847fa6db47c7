package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal and returns its terminal end.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("the pseudo-terminal cannot be opened: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}

// TestReportIsNotPrintedToATerminal (issue 31, item 9): audit report
// without -o on a terminal asks for -o, before any state is opened; to
// a file, a pipe or /dev/null it writes as before.
func TestReportIsNotPrintedToATerminal(t *testing.T) {
	tty := openPTY(t)
	home := t.TempDir()
	state := filepath.Join(home, "state")
	var errOut bytes.Buffer
	if code := run([]string{"audit", "report", "--state-dir", state}, strings.NewReader(""), tty, &errOut); code != 2 ||
		!strings.Contains(errOut.String(), "write it to a file with -o report.html") {
		t.Errorf("audit report to a terminal: exit %d, %q", code, errOut.String())
	}
	if _, err := os.Stat(state); err == nil {
		t.Error("the state was opened")
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	file, err := os.Create(filepath.Join(home, "out.html"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if !writesToTerminal(tty) || writesToTerminal(null) || writesToTerminal(file) || writesToTerminal(&errOut) {
		t.Error("writesToTerminal takes one thing for another")
	}
}
