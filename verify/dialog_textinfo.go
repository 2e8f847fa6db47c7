//go:build !darwin && !windows

package verify

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// On Linux and the BSDs both dialogs are zenity's --text-info, run here
// by its absolute path (resolved once, from system directories only, see
// programs.go) with the text on stdin: a scrollable, read-only view in
// which the human reads every argument and from which a code can be
// copied; nothing shown is in the dialog's arguments or environment,
// which every process can read in /proc. Without --html zenity inserts
// stdin as it is: no markup, no escapes. qarma, which the library would
// prefer if found on PATH, is never used: it guesses whether text is
// rich text.

// dialogPrograms are the programs accepted, in order: both are GTK zenity
// and take the same flags.
var dialogPrograms = []string{"zenity", "matedialog"}

var (
	programOnce sync.Once
	programPath string
	programErr  error
)

// dialogProgram resolves the dialog program once per process.
func dialogProgram() (string, error) {
	programOnce.Do(func() {
		programPath, programErr = findSystemProgram(dialogPrograms...)
		if programErr != nil {
			programErr = errNoProgram
		}
	})
	return programPath, programErr
}

// The dialogs' size in pixels: inside a 1280×720 screen with room for a
// panel and the window's decorations, the buttons always on screen; the
// text view scrolls.
const (
	dialogWidth     = 720
	dialogHeight    = 520
	maxDialogStderr = 4096
)

// Button labels. The OK button is GTK's default, so Return presses it:
// on the question it is Deny, so that a stray Return (or a program typing
// into the focused window) never approves. Approving takes a click on an
// extra button. zenity's text view always has a Cancel button too; on the
// question, which has one Deny, dialogStyle hides it (Escape and closing
// the window still deny).
const (
	denyLabel        = "Deny"
	cancelLabel      = "Deny"
	allowOnceLabel   = "Allow once"
	closeLabel       = "Close"
	copyAndCloseText = "Copy the code and close"
)

// dialogStyle is the GTK 3 style sheet of aqlguard's dialogs: the
// default button (Deny on a question, Close on a code) is the one that
// stands out, and the focused button is outlined, so a person sees what
// Return will do. hideCancel also hides the question's Cancel button,
// the first of its buttons: one Deny is enough.
func dialogStyle(hideCancel bool) string {
	css := `/* aqlguard: the default button stands out; the focused one is outlined. */
button.default { background-image: none; background-color: #1c71d8; color: #ffffff; font-weight: bold;
  border-color: #1a5fb4; box-shadow: none; text-shadow: none; }
button.default:hover { background-color: #3584e4; }
button.default label { color: #ffffff; }
button:focus { outline-color: #e66100; outline-style: solid; outline-width: 2px; outline-offset: 1px; }
`
	if hideCancel {
		css += `/* The question has one Deny: zenity's Cancel (also a deny) takes no room. */
buttonbox button:first-child { min-width: 0; min-height: 0; padding: 0; margin: 0; border-width: 0;
  box-shadow: none; background: none; opacity: 0; font-size: 0; }
buttonbox button:first-child label { font-size: 0; min-width: 0; min-height: 0; margin: 0; padding: 0; }
`
	}
	return css
}

// styledEnv prepares a private GTK configuration for one dialog: a
// directory that holds dialogStyle as its gtk.css, and the person's own
// GTK settings (settings.ini) and dconf database by link, so the dialog
// has their theme, fonts and scaling. Their own gtk.css is not loaded:
// a style sheet in the home directory, which an agent may be able to
// write, must not restyle the buttons of this dialog. It returns the
// environment for the dialog program and a cleanup; on any failure, the
// environment is nil (the dialog runs unstyled, its buttons still work).
func styledEnv(hideCancel bool) ([]string, func()) {
	dir, err := os.MkdirTemp("", "aqlguard-dialog-")
	if err != nil {
		return nil, func() {}
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	gtk := filepath.Join(dir, "gtk-3.0")
	if err := os.Mkdir(gtk, 0o700); err != nil {
		cleanup()
		return nil, func() {}
	}
	if err := os.WriteFile(filepath.Join(gtk, "gtk.css"), []byte(dialogStyle(hideCancel)), 0o600); err != nil {
		cleanup()
		return nil, func() {}
	}
	if user, err := os.UserConfigDir(); err == nil {
		if _, err := os.Stat(filepath.Join(user, "gtk-3.0", "settings.ini")); err == nil {
			_ = os.Symlink(filepath.Join(user, "gtk-3.0", "settings.ini"), filepath.Join(gtk, "settings.ini"))
		}
		if _, err := os.Stat(filepath.Join(user, "dconf")); err == nil {
			_ = os.Symlink(filepath.Join(user, "dconf"), filepath.Join(dir, "dconf"))
		}
	}
	return append(os.Environ(), "XDG_CONFIG_HOME="+dir), cleanup
}

// ask runs the question dialog and maps its answer: OK (Deny, Return),
// Cancel, Escape and closing the window deny; "Allow once" and "Allow for
// this session" are extra buttons, told apart by the label zenity prints.
func (d *DialogChannel) ask(ctx context.Context, disp Display, r Request) (Answer, error) {
	program, err := d.dialogPath()
	if err != nil {
		return None, err
	}
	text, err := questionText(r, d.clock(), false)
	if err != nil {
		return None, fmt.Errorf("dialog channel: %w", err)
	}
	args := []string{"--text-info", "--title=" + QuestionTitle,
		"--width=" + strconv.Itoa(dialogWidth), "--height=" + strconv.Itoa(dialogHeight),
		"--ok-label=" + denyLabel, "--cancel-label=" + cancelLabel, "--extra-button=" + allowOnceLabel}
	switch {
	case r.AllowSession:
		args = append(args, "--extra-button="+AllowSessionLabel)
	case r.Forget:
		args = append(args, "--extra-button="+ForgetLabel)
	}
	out, code, err := runDialog(ctx, disp, program, args, text, true)
	switch {
	case ctx.Err() != nil:
		return None, nil // a late answer does not count
	case err != nil:
		return None, err
	case code == 0:
		return Deny, nil
	case code == 1:
		switch strings.TrimSpace(out) {
		case allowOnceLabel:
			return Allow, nil
		case AllowSessionLabel:
			if r.AllowSession {
				return AllowSession, nil
			}
		case ForgetLabel:
			if r.Forget {
				return AllowForget, nil
			}
		}
		return Deny, nil // Cancel, Escape, the window's close button
	}
	return None, fmt.Errorf("dialog channel: the question dialog exited with status %d", code)
}

// showCode runs the code dialog: one button closes it, the other copies
// the code to the clipboard (through xclip or wl-copy, on their stdin)
// and closes it; Escape does the same as the second.
func (d *DialogChannel) showCode(ctx context.Context, disp Display, r Request) error {
	program, err := d.dialogPath()
	if err != nil {
		return err
	}
	args := []string{"--text-info", "--title=" + CodeTitle,
		"--width=" + strconv.Itoa(dialogWidth), "--height=" + strconv.Itoa(dialogHeight),
		"--ok-label=" + closeLabel, "--cancel-label=" + copyAndCloseText}
	_, code, err := runDialog(ctx, disp, program, args, codeText(r, d.clock(), r.Code), false)
	switch {
	case ctx.Err() != nil:
		return nil // the code was on screen until it expired
	case err != nil:
		return fmt.Errorf("%s", redact(err.Error(), r.Code))
	case code == 0:
		return nil
	case code == 1:
		if err := copyToClipboard(ctx, disp, r.Code); err != nil {
			return fmt.Errorf("dialog channel: the code was shown, but copying it to the clipboard failed: %s", redact(err.Error(), r.Code))
		}
		return nil
	}
	return fmt.Errorf("dialog channel: the verification code dialog exited with status %d", code)
}

// runDialog runs the dialog program with text on its stdin, styled (see
// styledEnv), and returns what it printed, its exit status, and an error
// only when it could not run. Its stderr (GTK warnings) is kept to
// explain a failure.
func runDialog(ctx context.Context, disp Display, program string, args []string, text string, hideCancel bool) (string, int, error) {
	env, cleanup := styledEnv(hideCancel)
	defer cleanup()
	if env == nil {
		env = os.Environ()
	}
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Env = disp.env(env)
	cmd.Stdin = strings.NewReader(text)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &stdout, n: maxStdout}
	cmd.Stderr = &limitedWriter{w: &stderr, n: maxDialogStderr}
	// zenity is one process, so killing it at ctx's end takes the window
	// down; WaitDelay keeps a wrapper's orphaned child from holding Wait.
	cmd.WaitDelay = waitDelay
	err := cmd.Run()
	if cmd.ProcessState == nil {
		return "", 0, fmt.Errorf("dialog channel: cannot start %s: %v", program, err)
	}
	code := cmd.ProcessState.ExitCode()
	if code == 1 && displayUnreachable(stderr.String()) {
		// zenity exits 1 when it cannot reach the display, exactly as
		// when a human presses Cancel: that is no human's answer.
		return "", code, fmt.Errorf("dialog channel: %s could not reach the display (%s, from %s): %w: %s", program,
			disp.Where(), disp.From, ErrNoDisplay, strings.TrimSpace(stderr.String()))
	}
	if code > 1 {
		msg := cmd.ProcessState.String()
		if s := strings.TrimSpace(stderr.String()); s != "" {
			msg += ": " + s
		}
		return "", code, fmt.Errorf("dialog channel: %s failed: %s", program, msg)
	}
	return stdout.String(), code, nil
}

// displayUnreachable reports whether a dialog program's stderr says it
// could not connect to the display: GTK's "cannot open display" (zenity,
// matedialog) and Qt's "could not connect to display" (qarma).
func displayUnreachable(stderr string) bool {
	return strings.Contains(stderr, "cannot open display") || strings.Contains(stderr, "could not connect to display")
}

// copyToClipboard puts code on the clipboard with xclip (X11) or wl-copy
// (Wayland), from a system directory, on the program's stdin.
func copyToClipboard(ctx context.Context, disp Display, code string) error {
	if p, err := findSystemProgram("wl-copy"); err == nil && disp.wayland() {
		cmd := exec.CommandContext(ctx, p)
		cmd.Env = disp.env(os.Environ())
		cmd.Stdin = strings.NewReader(code)
		return cmd.Run()
	}
	p, err := findSystemProgram("xclip")
	if err != nil {
		return fmt.Errorf("no clipboard program (xclip or wl-copy) in a system directory; select the code and copy it instead")
	}
	cmd := exec.CommandContext(ctx, p, "-selection", "clipboard")
	cmd.Env = disp.env(os.Environ())
	cmd.Stdin = strings.NewReader(code)
	// xclip serves the selection from a child it forks; Run returns once
	// the parent has handed over.
	cmd.WaitDelay = waitDelay
	return cmd.Run()
}

func (d *DialogChannel) dialogPath() (string, error) {
	if d.program != "" {
		return d.program, nil
	}
	return dialogProgram()
}

func platformProgram() error {
	_, err := dialogProgram()
	return err
}
