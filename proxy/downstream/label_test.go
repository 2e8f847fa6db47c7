package downstream

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/config"
)

// TestMessagesNameTheServerAsTheClientDoes (issue 31, item 9): a
// wrapped server named notes-desktop in its client's config is
// "notes-desktop" in aqlguard's log and in what the client is told, not
// the "notesdesktop" its operation names use.
func TestMessagesNameTheServerAsTheClientDoes(t *testing.T) {
	logs := &syncWriter{w: &bytes.Buffer{}}
	cfg := helper("notesdesktop", "crash", 0)
	cfg.Title = "notes-desktop"
	p := Start(context.Background(), []config.Server{cfg}, Options{Version: "test", Log: slog.New(slog.NewTextHandler(logs, nil))})
	defer p.Close()
	s, _ := p.Server("notesdesktop") // found by its name
	if msg := s.unavailable().Error(); !strings.Contains(msg, "server notes-desktop is not available") {
		t.Errorf("the client is told %q", msg)
	}
	if log := logs.String(); !strings.Contains(log, "server=notes-desktop") || strings.Contains(log, "server=notesdesktop") {
		t.Errorf("the log names the server otherwise:\n%s", log)
	}
}
