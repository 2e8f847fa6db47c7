package verify

import (
	"context"
	"log/slog"
	"strings"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/internal/registry"
)

// ChannelSetup is what a channel is opened with besides its [verify]
// table.
type ChannelSetup struct {
	// Log gets the channel's own lines (where it can reach, a command's
	// stderr); slog's default when nil.
	Log *slog.Logger
	// Reached, when set, is told what a dialog channel can reach, for
	// doctor (DialogChannel.Reached).
	Reached func(Display, error)
}

// OpenFunc opens a channel from the [verify] table.
type OpenFunc func(v config.Verify, s ChannelSetup) Channel

// Channels register themselves by name ([verify] channel): this package
// registers "dialog" and "command"; a new channel is a package that
// calls RegisterChannel from an init function, imported (blank) where
// the process is assembled (package app), with the name and its
// settings in package config.
var channels = registry.Of[OpenFunc]{Kind: "[verify] channel"}

// RegisterChannel makes a channel available under name. Registering a
// name twice is a mistake of the build, which OpenChannel reports.
func RegisterChannel(name string, open OpenFunc) { channels.Register(name, open) }

// Channels are the registered channels' names, sorted.
func Channels() []string { return channels.Names() }

// OpenChannel opens the channel v names (the dialog when it names
// none). A name this build lacks is an error; a caller that cannot stop
// uses Unreachable(err), which fails every question.
func OpenChannel(v config.Verify, s ChannelSetup) (Channel, error) {
	if s.Log == nil {
		s.Log = slog.Default()
	}
	name := v.Channel
	if name == "" {
		name = config.DefaultChannel
	}
	open, err := channels.Lookup(name)
	if err != nil {
		return nil, err
	}
	return open(v, s), nil
}

// Unreachable is a channel that reaches nobody: every question and code
// fails with err, so nothing is approved (Channel's contract).
func Unreachable(err error) Channel { return unreachable{err} }

type unreachable struct{ err error }

func (unreachable) Name() string                                   { return "none" }
func (u unreachable) Ask(context.Context, Request) (Answer, error) { return None, u.err }
func (u unreachable) Show(context.Context, Request) error          { return u.err }

func init() {
	RegisterChannel("command", func(v config.Verify, s ChannelSetup) Channel {
		c := NewCommand(v.Command)
		c.Stderr = logLines{s.Log.With("channel", "command")}
		return c
	})
	RegisterChannel("dialog", func(_ config.Verify, s ChannelSetup) Channel {
		d := NewDialog()
		d.Reached = s.Reached
		if disp, err := d.Display(); err == nil {
			s.Log.Info("dialogs go to the graphical session", "display", disp.Where(), "from", disp.From)
		}
		if err := d.Check(); err != nil {
			s.Log.Warn("the dialog channel cannot reach a human: every question will go unanswered and every code unshown "+
				"(nothing is approved; blocks stay). `aqlguard doctor` says how to fix it, or set [verify] channel = \"command\"", "problem", err)
		}
		return d
	})
}

// logLines turns a command channel's stderr into log lines.
type logLines struct{ log *slog.Logger }

func (w logLines) Write(p []byte) (int, error) {
	w.log.Info("human channel stderr", "text", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
