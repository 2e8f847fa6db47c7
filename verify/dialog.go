package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ncruces/zenity"
)

// DialogChannel asks and shows in native dialogs (zenity on Linux).
type DialogChannel struct{}

// NewDialog returns the dialog channel.
func NewDialog() *DialogChannel { return &DialogChannel{} }

// Name implements Channel.
func (*DialogChannel) Name() string { return "dialog" }

// ready fails closed before zenity runs: with no display zenity exits as
// if the human had pressed Cancel.
func ready() error {
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return ErrNoDisplay
	}
	if !zenity.IsAvailable() {
		return errors.New("no dialog program (zenity, qarma or matedialog) is installed")
	}
	return nil
}

const maxShownArgs = 2000

func questionText(r Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Agent: %s\nOperation: %s\n", r.Agent, r.Operation)
	if r.Reason != "" {
		fmt.Fprintf(&b, "Why: %s\n", r.Reason)
	}
	fmt.Fprintf(&b, "Action: %s\n", r.Action)
	if len(r.Arguments) > 0 {
		args, _ := json.MarshalIndent(r.Arguments, "", "  ")
		s := string(args)
		if len(s) > maxShownArgs {
			s = s[:maxShownArgs] + fmt.Sprintf("… (%d more characters)", len(s)-maxShownArgs)
		}
		fmt.Fprintf(&b, "Arguments:\n%s\n", s)
	}
	fmt.Fprintf(&b, "\nAllow this once? (expires %s)", r.ExpiresAt.Local().Format(time.Kitchen))
	return b.String()
}

// Ask implements Channel.
func (d *DialogChannel) Ask(ctx context.Context, r Request) (Answer, error) {
	if err := ready(); err != nil {
		return None, err
	}
	err := zenity.Question(questionText(r), zenity.Title("aqlguard: allow this action?"),
		zenity.OKLabel("Allow once"), zenity.CancelLabel("Deny"), zenity.NoWrap(), zenity.Context(ctx))
	switch {
	case err == nil:
		return Allow, nil
	case ctx.Err() != nil:
		return None, nil
	case errors.Is(err, zenity.ErrCanceled):
		return Deny, nil
	}
	return None, fmt.Errorf("dialog: %w", err)
}

// Show implements Channel: the code in a selectable entry field.
func (d *DialogChannel) Show(ctx context.Context, r Request) error {
	if err := ready(); err != nil {
		return err
	}
	text := fmt.Sprintf("Agent: %s\nAction: %s\nTier: %s\nExpires: %s\n\nType this code into verify_challenge (copy it from the field):",
		r.Agent, r.Action, r.Tier, r.ExpiresAt.Local().Format(time.Kitchen))
	_, err := zenity.Entry(text, zenity.Title("aqlguard: verification code"), zenity.EntryText(r.Code), zenity.Context(ctx))
	if err != nil && !errors.Is(err, zenity.ErrCanceled) && ctx.Err() == nil {
		return fmt.Errorf("dialog: showing a verification code failed")
	}
	return nil
}
