package verify

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncruces/zenity"
)

// These tests run without X: a fake zenity (and qarma and matedialog, the
// other names the library tries) on PATH records its arguments and
// behaves as told, so the mapping of exits to answers and the arguments
// we pass are checked on any machine. dialog_xvfb_test.go does the same
// with real dialogs.

type fakeZenity struct {
	dir, args, stdin, env, pid string
}

// installFakeZenity puts the fake first on PATH. It records its
// arguments, stdin and environment. mode: ok (exit 0), cancel (exit 1),
// fail (exit 5 with a stderr that echoes every argument and its stdin),
// hang (exec sleep: one process, as the real zenity is).
func installFakeZenity(t *testing.T, mode string) fakeZenity {
	t.Helper()
	// The library picks its program's name (qarma, zenity or matedialog,
	// the first on PATH) once per process, the first time a dialog runs,
	// and then runs that name through PATH each time. Let it pick from
	// the real PATH now, or the tests with real dialogs would later run a
	// name only the fake had. The fake takes all three names, so it runs
	// whichever was picked.
	zenity.IsAvailable()
	dir := t.TempDir()
	f := fakeZenity{dir: dir, args: filepath.Join(dir, "args"), stdin: filepath.Join(dir, "stdin"),
		env: filepath.Join(dir, "env"), pid: filepath.Join(dir, "pid")}
	src := `#!/bin/sh
echo $$ > ` + strconv.Quote(f.pid) + `
for a in "$@"; do printf '%s\0' "$a"; done > ` + strconv.Quote(f.args) + `
env > ` + strconv.Quote(f.env) + `
cat > ` + strconv.Quote(f.stdin) + `
case ` + mode + ` in
ok) exit 0 ;;
cancel) exit 1 ;;
fail) echo "Gtk-WARNING: failed with $*" >&2; cat ` + strconv.Quote(f.stdin) + ` >&2; exit 5 ;;
hang) exec sleep 300 ;;
esac
`
	for _, name := range []string{"zenity", "qarma", "matedialog"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return f
}

// argv returns the arguments the fake was run with, or nil if it never ran.
func (f fakeZenity) argv(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(f.args)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// fakeDialog is a DialogChannel with a display and the fake as its
// program (the library looks the program up once per process, so
// availability is forced here rather than taken from PATH).
func fakeDialog(t *testing.T) *DialogChannel {
	t.Setenv("DISPLAY", ":99")
	t.Setenv("WAYLAND_DISPLAY", "")
	return &DialogChannel{available: func() bool { return true }, now: func() time.Time { return renderNow }}
}

var challengeReq = Request{Kind: KindChallenge, Agent: "agent_a", Action: `fs.delete_file {"path":"C:\\tmp\\x"}`,
	Challenge: "123e4567-e89b-42d3-a456-426614174000", Code: "7K3M-0QZ8-ABCD-EFGH-JKMNP-QRST0", Tier: "danger_zone",
	ExpiresAt: renderNow.Add(5 * time.Minute)}

// With neither DISPLAY nor WAYLAND_DISPLAY, both calls fail with
// ErrNoDisplay before any dialog program runs.
func TestDialogWithoutDisplayFailsClosed(t *testing.T) {
	fake := installFakeZenity(t, "cancel")
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	d := NewDialog()
	if a, err := d.Ask(context.Background(), confirmation); a != None || !errors.Is(err, ErrNoDisplay) {
		t.Errorf("Ask = %q, %v; want none, ErrNoDisplay", a, err)
	}
	err := d.Show(context.Background(), challengeReq)
	if !errors.Is(err, ErrNoDisplay) {
		t.Errorf("Show = %v; want ErrNoDisplay", err)
	}
	if args := fake.argv(t); args != nil {
		t.Errorf("a dialog program ran: %q", args)
	}

	// Either display variable is enough to try.
	t.Setenv("WAYLAND_DISPLAY", "wayland-0")
	d.available = func() bool { return true }
	if a, err := d.Ask(context.Background(), confirmation); a != Deny || err != nil {
		t.Errorf("with WAYLAND_DISPLAY: Ask = %q, %v", a, err)
	}
}

func TestDialogWithoutProgramFailsClosed(t *testing.T) {
	d := fakeDialog(t)
	d.available = func() bool { return false }
	a, err := d.Ask(context.Background(), confirmation)
	if a != None || err == nil || !strings.Contains(err.Error(), "zenity") || errors.Is(err, ErrNoDisplay) {
		t.Errorf("Ask = %q, %v", a, err)
	}
	if err := d.Show(context.Background(), challengeReq); err == nil || !strings.Contains(err.Error(), "zenity") {
		t.Errorf("Show = %v", err)
	}
}

func TestDialogRejectsWrongKinds(t *testing.T) {
	fake := installFakeZenity(t, "ok")
	d := fakeDialog(t)
	if a, err := d.Ask(context.Background(), challengeReq); a != None || err == nil || strings.Contains(err.Error(), challengeReq.Code) {
		t.Errorf("Ask(challenge) = %q, %v", a, err)
	}
	if err := d.Show(context.Background(), confirmation); err == nil {
		t.Error("Show(confirmation) did not fail")
	}
	noCode := challengeReq
	noCode.Code = ""
	if err := d.Show(context.Background(), noCode); err == nil {
		t.Error("Show without a code did not fail")
	}
	if args := fake.argv(t); args != nil {
		t.Errorf("a dialog program ran: %q", args)
	}
}

func TestDialogAskMapsExits(t *testing.T) {
	for mode, want := range map[string]Answer{"ok": Allow, "cancel": Deny, "fail": None} {
		t.Run(mode, func(t *testing.T) {
			fake := installFakeZenity(t, mode)
			d := fakeDialog(t)
			a, err := d.Ask(context.Background(), confirmation)
			if a != want || (err != nil) != (mode == "fail") {
				t.Errorf("Ask = %q, %v; want %q", a, err, want)
			}
			text, _ := questionText(confirmation, renderNow)
			want := []string{"--text", text, "--no-markup", "--question", "--title", QuestionTitle,
				"--ok-label", "Allow once", "--cancel-label", "Deny", "--no-wrap"}
			if got := fake.argv(t); !slices.Equal(got, want) {
				t.Errorf("argv\n got %q\nwant %q", got, want)
			}
		})
	}
}

// When ctx ends, Ask answers None, and the dialog process is killed (the
// fake execs sleep, so its pid is the dialog's).
func TestDialogAskTimeoutKillsTheDialog(t *testing.T) {
	fake := installFakeZenity(t, "hang")
	d := fakeDialog(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if a, err := d.Ask(ctx, confirmation); a != None || err != nil {
		t.Errorf("Ask = %q, %v", a, err)
	}
	b, err := os.ReadFile(fake.pid)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	waitGone(t, pid)

	// A context that is already done asks nothing.
	os.Remove(fake.args)
	if a, err := d.Ask(ctx, confirmation); a != None || err != nil || fake.argv(t) != nil {
		t.Errorf("Ask after the deadline = %q, %v", a, err)
	}
}
