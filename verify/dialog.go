package verify

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"
)

// Dialog titles. Tests and people find the windows by them.
const (
	QuestionTitle = "aqlguard: allow this action?"
	CodeTitle     = "aqlguard: verification code"
	// AllowSessionLabel is the question dialog's third button, offered
	// when a standing approval of the tool may answer it.
	AllowSessionLabel = "Allow for this session"
	// ForgetLabel is the third button of a question about where data
	// goes (Request.Forget).
	ForgetLabel = "Allow, and forget what this chat read"
)

// DialogChannel asks and shows in native dialogs: on Linux and the BSDs
// zenity's text-info dialog, run by its absolute path from a system
// directory (dialog_textinfo.go); on macOS and Windows the platform's own
// dialogs through github.com/ncruces/zenity (dialog_entry.go).
//
// It is safe for concurrent use; each request runs its own dialog process.
type DialogChannel struct {
	// available reports whether a dialog program can be used; nil means
	// the platform's check. Tests replace it.
	available func() error
	// now is the clock for the "expires in" hint; nil means time.Now.
	// Tests fix it to compare the rendered text exactly.
	now func() time.Time
	// program replaces the dialog program found in the system
	// directories (tests run a fake).
	program string
	// find finds the display dialogs go on; nil means FindDisplay.
	// Tests replace it.
	find func() (Display, error)
	// Reached, when set, is told where each dialog could be put, or why
	// not, before it is put up (and at Check): aqlguard records it for
	// doctor, which reports what the client's last start could reach.
	Reached func(Display, error)
}

func (d *DialogChannel) clock() time.Time {
	if d.now != nil {
		return d.now()
	}
	return time.Now()
}

// NewDialog returns the dialog channel. The dialog program is looked up
// now, once, so that a program planted on $PATH later changes nothing.
func NewDialog() *DialogChannel {
	d := &DialogChannel{}
	_ = d.programCheck()
	return d
}

// Name implements Channel.
func (*DialogChannel) Name() string { return "dialog" }

// Check reports why the channel cannot put a dialog in front of a human
// (no display, no trusted dialog program), or nil. aqlguard warns at
// start when it fails, and doctor reports it.
func (d *DialogChannel) Check() error {
	_, err := d.ready()
	return err
}

// Display is where the next dialog would go (FindDisplay), or why
// nowhere: aqlguard logs it at start.
func (d *DialogChannel) Display() (Display, error) {
	if !needsDisplay() {
		return Display{From: "the system's own dialogs"}, nil
	}
	if d.find != nil {
		return d.find()
	}
	return FindDisplay()
}

// needsDisplay: macOS and Windows dialogs need no X or Wayland display.
func needsDisplay() bool { return runtime.GOOS != "darwin" && runtime.GOOS != "windows" }

// ready fails closed before any dialog program runs. Without a display
// zenity exits 1, exactly as when a human presses Cancel, and that must
// not be taken for a human's Deny (or, in Show, for a code that was seen).
// Without a dialog program nothing could be asked at all. It returns
// the display the dialog goes on (found again for every dialog: a
// session may have ended or begun since).
func (d *DialogChannel) ready() (Display, error) {
	disp, err := d.Display()
	if err == nil {
		err = d.programCheck()
	} else {
		err = fmt.Errorf("dialog channel: %w", err)
	}
	if d.Reached != nil {
		d.Reached(disp, err)
	}
	return disp, err
}

func (d *DialogChannel) programCheck() error {
	if d.available != nil {
		return d.available()
	}
	return platformProgram()
}

// Ask implements Channel with a question dialog that shows who asks for
// what, why, and the arguments in full. Deny is the default (Return),
// and Escape, Cancel or closing the window deny too; "Allow once" and,
// when offered, "Allow for this session" must be chosen on purpose. It
// returns None when ctx ends first: the dialog is closed and an answer
// that races the deadline does not count.
func (d *DialogChannel) Ask(ctx context.Context, r Request) (Answer, error) {
	if r.Kind != KindConfirmation {
		return None, fmt.Errorf("dialog channel: Ask needs a confirmation request, got kind %q", r.Kind)
	}
	disp, err := d.ready()
	if err != nil {
		return None, err
	}
	if ctx.Err() != nil {
		return None, nil // no time left for anyone to answer
	}
	return d.ask(ctx, disp, r)
}

// Show implements Channel with a dialog that shows the code and its
// context (codeText) so that the human can select and copy the code. It
// returns nil when the human closes the dialog (either button) or when
// ctx ends (the code was on screen until then; the dialog is killed),
// and an error only when the dialog could not be put up. The code never
// appears in a dialog program's arguments or environment, which every
// process on the machine can read; no error carries it. showCode differs
// by platform: zenity's text-info dialog, fed on its stdin, on Linux and
// the BSDs (dialog_textinfo.go); the platform's own dialog through the
// library on macOS and Windows (dialog_entry.go).
func (d *DialogChannel) Show(ctx context.Context, r Request) error {
	if r.Kind != KindChallenge {
		return fmt.Errorf("dialog channel: Show needs a challenge request, got kind %q", r.Kind)
	}
	if r.Code == "" {
		return errors.New("dialog channel: the challenge request has no code to show")
	}
	disp, err := d.ready()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("dialog channel: not shown: %w", err)
	}
	return d.showCode(ctx, disp, r)
}
