//go:build darwin || windows

package verify

import (
	"context"
	"errors"
	"fmt"

	"github.com/ncruces/zenity"
)

// platformProgram: macOS and Windows dialogs are the system's own.
func platformProgram() error { return nil }

// ask uses the platform's question dialog through the library, with
// Cancel (Deny) the default button. Its text is not scrollable there, so
// long arguments are cut (questionText with capped).
func (d *DialogChannel) ask(ctx context.Context, _ Display, r Request) (Answer, error) {
	text, err := questionText(r, d.clock(), true)
	if err != nil {
		return None, fmt.Errorf("dialog channel: %w", err)
	}
	opts := []zenity.Option{zenity.Title(QuestionTitle), zenity.OKLabel(allowOnceLabel), zenity.CancelLabel(denyLabel),
		zenity.DefaultCancel(), zenity.NoWrap(), zenity.Context(ctx)}
	switch {
	case r.AllowSession:
		opts = append(opts, zenity.ExtraButton(AllowSessionLabel))
	case r.Forget:
		opts = append(opts, zenity.ExtraButton(ForgetLabel))
	}
	err = zenity.Question(text, opts...)
	switch {
	case ctx.Err() != nil:
		return None, nil
	case err == nil:
		return Allow, nil
	case r.AllowSession && errors.Is(err, zenity.ErrExtraButton):
		return AllowSession, nil
	case r.Forget && errors.Is(err, zenity.ErrExtraButton):
		return AllowForget, nil
	case errors.Is(err, zenity.ErrCanceled):
		return Deny, nil
	}
	return None, fmt.Errorf("dialog channel: the question dialog failed: %w", err)
}

const (
	denyLabel      = "Deny"
	allowOnceLabel = "Allow once"
)

// showCode puts the code into the entry field of the platform's own
// dialog through the library, which, unlike zenity on Linux and the BSDs,
// puts it in no process's arguments: on macOS the library gives osascript
// its script on stdin, and on Windows it draws the dialog in this
// process. The field is pre-selected, so the human can copy the code.
func (d *DialogChannel) showCode(ctx context.Context, _ Display, r Request) error {
	_, err := zenity.Entry(codeText(r, d.clock(), ""), zenity.Title(CodeTitle), zenity.EntryText(r.Code),
		zenity.OKLabel("Close"), zenity.Context(ctx))
	switch {
	case ctx.Err() != nil, err == nil, errors.Is(err, zenity.ErrCanceled):
		// Whatever the entry holds now is the human's business: ignored,
		// never logged.
		return nil
	}
	return fmt.Errorf("dialog channel: the verification code dialog failed: %s", redact(err.Error(), r.Code))
}
