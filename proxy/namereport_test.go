package proxy

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/proxy/names"
	"github.com/aqlguard/aqlguard/store"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// process is one aqlguard's NameReport (its servers, its log) on st.
func process(st store.State, principal string, at *time.Time, servers ...string) (*NameReport, *lockedBuffer) {
	logs := &lockedBuffer{}
	r := &NameReport{State: st, Principal: principal, Process: "host/" + servers[0], Log: slog.New(slog.NewTextHandler(logs, nil)),
		Servers: func() []string { return servers }, now: func() time.Time { return *at }}
	return r, logs
}

// TestNameReportAcrossProcesses: two processes of one client on one state
// (two `aqlguard wrap` entries), each knowing only its own server, warn
// of the tool name both servers offer, naming both, once; a process of
// another client (another principal) does not count, nor does a server
// not seen for RecordedWithin.
func TestNameReportAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	fs, fsLog := process(st, "claude-desktop", &now, "filesystem")
	evil, evilLog := process(st, "claude-desktop", &now, "helper")
	other, otherLog := process(st, "cursor", &now, "notes")

	fs.Start(ctx)
	fs.Listed("filesystem", names.Tool, []string{"read_file", "write_file"})
	fs.Close()
	other.Listed("notes", names.Tool, []string{"read_file"})
	other.Close()
	evil.Start(ctx)
	evil.Listed("helper", names.Tool, []string{"read_file", "summarize"})
	evil.Close()
	const collision = `tool \"read_file\" is offered by servers filesystem and helper`
	if got := evilLog.String(); !strings.Contains(got, collision) || !strings.Contains(got, "host/filesystem") {
		t.Fatalf("the second process did not warn of the collision, naming both servers and where the other runs:\n%s", got)
	}
	if strings.Contains(evilLog.String(), "notes") || strings.Contains(otherLog.String(), "read_file") {
		t.Errorf("another client's server counted:\n%s\n%s", evilLog, otherLog)
	}
	// Listed again (a second session, a refresh): not warned again.
	evil.Listed("helper", names.Tool, []string{"read_file", "summarize"})
	evil.Close()
	if n := strings.Count(evilLog.String(), collision); n != 1 {
		t.Errorf("warned %d times of one collision:\n%s", n, evilLog)
	}
	// The first process, starting again, finds the second's record.
	fs2, fs2Log := process(st, "claude-desktop", &now, "filesystem")
	fs2.Listed("filesystem", names.Tool, []string{"read_file"})
	fs2.Close()
	if !strings.Contains(fs2Log.String(), collision) {
		t.Errorf("the first process, started again, did not warn:\n%s", fs2Log)
	}
	if strings.Contains(fsLog.String(), collision) {
		t.Errorf("the first process warned before the second existed:\n%s", fsLog)
	}
	// A month later, a server nobody started since is no longer the
	// client's.
	now = now.Add(RecordedWithin + time.Hour)
	fs3, fs3Log := process(st, "claude-desktop", &now, "filesystem")
	fs3.Listed("filesystem", names.Tool, []string{"read_file"})
	fs3.Close()
	if strings.Contains(fs3Log.String(), "read_file") {
		t.Errorf("a server not seen for %s still counted:\n%s", RecordedWithin, fs3Log)
	}
}

// TestNameReportPromptsAndImitations: prompts are recorded beside the
// tools (a tools listing keeps the prompts recorded, and the other way
// round), and a server whose name passes for another's, or for a
// well-known server's, is reported at start.
func TestNameReportPromptsAndImitations(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	gh, _ := process(st, "claude-desktop", &now, "github")
	gh.Listed("github", names.Tool, []string{"create_issue"})
	gh.Close()
	gh.Listed("github", names.Prompt, []string{"triage"})
	gh.Close()
	gh.Listed("github", names.Tool, []string{"create_issue", "list_issues"})
	gh.Close()
	var recorded []store.ServerNames
	if err := st.Load(ctx, func(v store.View) (err error) { recorded, err = v.ServerNames("claude-desktop"); return }); err != nil {
		t.Fatal(err)
	}
	if len(recorded) != 1 || len(recorded[0].Tools) != 2 || len(recorded[0].Prompts) != 1 || !recorded[0].PromptsListed {
		t.Fatalf("recorded: %+v", recorded)
	}
	squat, logs := process(st, "claude-desktop", &now, "githb", "fi1esystem")
	squat.Start(ctx)
	squat.Listed("githb", names.Prompt, []string{"triage"})
	squat.Close()
	got := logs.String()
	for _, want := range []string{
		`server names \"githb\" and \"github\" pass for each other`,
		`server name \"fi1esystem\" passes for the well-known server \"filesystem\"`,
		`prompt \"triage\" is offered by servers githb and github`,
	} {
		if strings.Count(got, want) != 1 {
			t.Errorf("want %s once in:\n%s", want, got)
		}
	}
}
