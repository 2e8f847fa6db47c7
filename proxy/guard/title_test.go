package guard

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/proxy/watch"
)

// The human and the log name a server as its client config spells it
// (issue 31, item 9): `wrap notes-db` serves the name "notesdb", and the
// person who wrote "notes-db" is shown "notes-db".
func TestTheHumanSeesTheServersTitle(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g := newGuard(t, testPolicy, h)
	g.Policy.Titles = map[string]string{"db": "notes-db"}
	log := &lockedBuffer{}
	g.Log = slog.New(slog.NewTextHandler(log, nil))
	g.Call(ctx, Request{Method: watch.MethodToolsCall, Action: call("db_drop_database", map[string]any{"name": "prod"})})
	waitFor(t, func() bool { return len(shownCodes(h)) == 1 })
	if got := shownCodes(h)[0].Server; got != "notes-db" {
		t.Errorf("the code's window names the server %q, want notes-db", got)
	}
	if !strings.Contains(log.String(), "msg=\"call refused\"") || !strings.Contains(log.String(), "server=notes-db") {
		t.Errorf("the log does not name notes-db:\n%s", log.String())
	}
}
