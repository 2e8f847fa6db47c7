//go:build !darwin && !windows

package verify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// textInfoPrograms are the programs showCode runs, in order of
// preference: both are GTK zenity and take the same flags. qarma, which
// the library also accepts, is left out: it puts text read from stdin
// into a QTextEdit with setText, which guesses whether the text is rich
// text, so an agent's action could style or hide part of what the human
// reads.
var textInfoPrograms = [...]string{"zenity", "matedialog"}

const (
	// The code dialog's size in pixels: wide enough for a line of
	// maxLineChars, tall enough for the context and the code without
	// scrolling unless a field runs long.
	textInfoWidth  = 760
	textInfoHeight = 520
	// maxDialogStderr is how much of the dialog program's stderr is kept
	// to explain a failure.
	maxDialogStderr = 4096
)

// textInfoProgram finds the dialog program on PATH.
func textInfoProgram() (string, error) {
	for _, name := range textInfoPrograms {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	return "", errors.New(`dialog channel: showing a verification code needs zenity or matedialog ` +
		`(qarma cannot be trusted to show plain text); install zenity, or set [verify] channel = "command"`)
}

// showCode runs zenity --text-info itself. Through the library the code
// could only go into an argument (--entry-text), and any process on the
// machine, the agent's shell included, can read any other's arguments in
// /proc/PID/cmdline for as long as the dialog is open. Here the whole
// text, code included, goes to the dialog's stdin, a pipe between this
// process and the dialog; its arguments and environment carry nothing
// secret. Without --html zenity inserts stdin into a read-only text view
// as it is (no markup, no escapes), and the human can select and copy
// from it.
func (d *DialogChannel) showCode(ctx context.Context, r Request) error {
	program, err := textInfoProgram()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, program, "--text-info", "--title="+CodeTitle,
		"--width="+strconv.Itoa(textInfoWidth), "--height="+strconv.Itoa(textInfoHeight),
		"--ok-label=Done", "--cancel-label=Close")
	cmd.Stdin = strings.NewReader(codeText(r, d.clock(), r.Code))
	// Stdout stays the null device: aqlguard's own stdout is the MCP
	// stream, and a dialog has nothing to say on it.
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: maxDialogStderr}
	// zenity is one process, so killing it on ctx's end takes the window
	// down; WaitDelay keeps a wrapper's orphaned child from holding Wait.
	cmd.WaitDelay = waitDelay
	err = cmd.Run()
	switch {
	case ctx.Err() != nil:
		return nil
	case cmd.ProcessState == nil:
		return fmt.Errorf("dialog channel: cannot start the verification code dialog: %s", redact(err.Error(), r.Code))
	}
	// Exit 0 is Done, 1 is Close, Escape or the window's close button;
	// what the dialog's stdout would say is not asked for. The status
	// stands even when Wait reports ErrWaitDelay.
	switch cmd.ProcessState.ExitCode() {
	case 0, 1:
		return nil
	}
	// The dialog never had the code in its arguments to echo, but it did
	// read it: redact its stderr all the same.
	msg := cmd.ProcessState.String()
	if s := strings.TrimSpace(stderr.String()); s != "" {
		msg += ": " + s
	}
	return fmt.Errorf("dialog channel: the verification code dialog (%s) failed: %s", program, redact(msg, r.Code))
}
