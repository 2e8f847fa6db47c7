package verify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/ncruces/zenity"
)

// Dialog titles. Tests and people find the windows by them.
const (
	QuestionTitle = "aqlguard: allow this action?"
	CodeTitle     = "aqlguard: verification code"
	// AllowSessionLabel is the question dialog's third button, offered
	// when a standing approval of the tool may answer it.
	AllowSessionLabel = "Allow for this session"
)

// DialogChannel asks and shows in native dialogs: zenity (or qarma or
// matedialog) on Linux and the BSDs, through github.com/ncruces/zenity,
// which uses the platform's own dialogs on macOS and Windows. The code
// dialog on Linux and the BSDs is the exception: Show runs zenity (or
// matedialog) itself, because the library could only pass the code as
// an argument.
//
// It is safe for concurrent use; each request runs its own dialog process.
type DialogChannel struct {
	// available reports whether a dialog program is installed; nil means
	// zenity.IsAvailable. Tests replace it: the library looks the program
	// up once per process.
	available func() bool
	// now is the clock for the "expires in" hint; nil means time.Now.
	// Tests fix it to compare the rendered text exactly.
	now func() time.Time
}

func (d *DialogChannel) clock() time.Time {
	if d.now != nil {
		return d.now()
	}
	return time.Now()
}

// NewDialog returns the dialog channel.
func NewDialog() *DialogChannel { return &DialogChannel{} }

// Name implements Channel.
func (*DialogChannel) Name() string { return "dialog" }

// ready fails closed before any dialog program runs. Without a display
// zenity exits 1, exactly as when a human presses Cancel, and that must
// not be taken for a human's Deny (or, in Show, for a code that was seen).
// Without a dialog program nothing could be asked at all.
func (d *DialogChannel) ready() error {
	// macOS and Windows dialogs need no X or Wayland display.
	if runtime.GOOS != "darwin" && runtime.GOOS != "windows" &&
		os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return fmt.Errorf("dialog channel: %w", ErrNoDisplay)
	}
	available := d.available
	if available == nil {
		available = zenity.IsAvailable
	}
	if !available() {
		return errors.New(`dialog channel: no dialog program is installed (zenity, qarma or matedialog); ` +
			`install zenity, or set [verify] channel = "command"`)
	}
	return nil
}

// Ask implements Channel with a question dialog: "Allow once" (the
// default button, so Return approves, as in any dialog) or "Deny". It
// returns Allow for Allow once, Deny for Deny, Escape or closing the
// window, and None when ctx ends first: the dialog process is then killed
// (zenity.Context runs it with exec.CommandContext) and an answer that
// races the deadline does not count.
//
// The text is rendered by questionText. zenity passes --no-markup for
// message dialogs, so it is shown literally: no Pango markup or escapes
// to worry about; control and bidi characters are escaped all the same
// so that what the human reads is what will run. The dialog runs with
// --no-wrap so the JSON keeps its indentation; questionText breaks long
// lines itself.
func (d *DialogChannel) Ask(ctx context.Context, r Request) (Answer, error) {
	if r.Kind != KindConfirmation {
		return None, fmt.Errorf("dialog channel: Ask needs a confirmation request, got kind %q", r.Kind)
	}
	if err := d.ready(); err != nil {
		return None, err
	}
	if ctx.Err() != nil {
		return None, nil // no time left for anyone to answer
	}
	text, err := questionText(r, d.clock())
	if err != nil {
		return None, fmt.Errorf("dialog channel: %w", err)
	}
	opts := []zenity.Option{zenity.Title(QuestionTitle), zenity.OKLabel("Allow once"), zenity.CancelLabel("Deny"),
		zenity.NoWrap(), zenity.Context(ctx)}
	if r.AllowSession {
		opts = append(opts, zenity.ExtraButton(AllowSessionLabel))
	}
	err = zenity.Question(text, opts...)
	switch {
	case ctx.Err() == nil && r.AllowSession && errors.Is(err, zenity.ErrExtraButton):
		return AllowSession, nil
	case ctx.Err() != nil:
		// The library reports ctx.Err() whenever ctx is done after the
		// dialog returns; checking first keeps a late answer from counting.
		return None, nil
	case err == nil:
		return Allow, nil
	case errors.Is(err, zenity.ErrCanceled):
		return Deny, nil
	}
	return None, fmt.Errorf("dialog channel: the question dialog failed: %w", err)
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
	if err := d.ready(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("dialog channel: not shown: %w", err)
	}
	return d.showCode(ctx, r)
}
