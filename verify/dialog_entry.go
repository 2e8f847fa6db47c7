//go:build darwin || windows

package verify

import (
	"context"
	"errors"
	"fmt"

	"github.com/ncruces/zenity"
)

// showCode puts the code into the entry field of the platform's own
// dialog through the library, which, unlike zenity on Linux and the BSDs,
// puts it in no process's arguments: on macOS the library gives osascript
// its script on stdin, and on Windows it draws the dialog in this
// process. The field is pre-selected, so the human can copy the code.
func (d *DialogChannel) showCode(ctx context.Context, r Request) error {
	_, err := zenity.Entry(codeText(r, d.clock(), ""), zenity.Title(CodeTitle), zenity.EntryText(r.Code),
		zenity.OKLabel("Done"), zenity.CancelLabel("Close"), zenity.Context(ctx))
	switch {
	case ctx.Err() != nil, err == nil, errors.Is(err, zenity.ErrCanceled):
		// Whatever the entry holds now is the human's business: ignored,
		// never logged.
		return nil
	}
	return fmt.Errorf("dialog channel: the verification code dialog failed: %s", redact(err.Error(), r.Code))
}
