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
)

// These tests run without X: a fake dialog program records its arguments
// and stdin and behaves as told, so the mapping of exits to answers and
// the arguments we pass are checked on any machine. dialog_xvfb_test.go
// does the same with real dialogs.

type fakeZenity struct {
	path, args, stdin, env, pid string
}

// newFakeZenity writes the fake. mode: deny (OK, exit 0), cancel (exit 1,
// nothing printed: Cancel, Escape, close), allow / session (exit 1 and
// the extra button's label), fail (exit 5 with a stderr that echoes every
// argument and its stdin), nodisplay / qtnodisplay (exit 1, as Cancel,
// with GTK's or Qt's complaint that the display cannot be reached), hang (exec sleep: one process, as the real
// zenity is).
func newFakeZenity(t *testing.T, mode string) fakeZenity {
	t.Helper()
	dir := t.TempDir()
	f := fakeZenity{path: filepath.Join(dir, "zenity"), args: filepath.Join(dir, "args"), stdin: filepath.Join(dir, "stdin"),
		env: filepath.Join(dir, "env"), pid: filepath.Join(dir, "pid")}
	src := `#!/bin/sh
echo $$ > ` + strconv.Quote(f.pid) + `
for a in "$@"; do printf '%s\0' "$a"; done > ` + strconv.Quote(f.args) + `
env > ` + strconv.Quote(f.env) + `
cat > ` + strconv.Quote(f.stdin) + `
case ` + mode + ` in
deny) exit 0 ;;
cancel) exit 1 ;;
allow) echo "Allow once"; exit 1 ;;
session) echo "Allow for this session"; exit 1 ;;
nodisplay) echo "(zenity:1): Gtk-WARNING **: 06:37:51.631: cannot open display: :99" >&2; exit 1 ;;
qtnodisplay) echo "qt.qpa.xcb: could not connect to display :99" >&2; exit 1 ;;
fail) echo "Gtk-WARNING: failed with $*" >&2; cat ` + strconv.Quote(f.stdin) + ` >&2; exit 5 ;;
hang) exec sleep 300 ;;
esac
`
	if err := os.WriteFile(f.path, []byte(src), 0o700); err != nil {
		t.Fatal(err)
	}
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
// program.
func fakeDialog(t *testing.T, f fakeZenity) *DialogChannel {
	t.Setenv("DISPLAY", ":99")
	t.Setenv("WAYLAND_DISPLAY", "")
	return &DialogChannel{available: func() error { return nil }, now: func() time.Time { return renderNow }, program: f.path,
		find: ownDisplayOnly}
}

// ownDisplayOnly finds the display the test's environment names, and
// nothing beyond it: what the machine running the test has is not the
// test's.
func ownDisplayOnly() (Display, error) {
	d, ok, err := ownDisplay(os.LookupEnv)
	if !ok && err == nil {
		err = noDisplay("the test's environment names none")
	}
	return d, err
}

var challengeReq = Request{Kind: KindChallenge, Agent: "agent_a", Action: `fs.delete_file {"path":"C:\\tmp\\x"}`,
	Challenge: "123e4567-e89b-42d3-a456-426614174000", Code: "7K3M-0QZ8-ABCD-EFGH-JKMNP-QRST0", Tier: "danger_zone",
	Reason: "Action matches deny pattern \"*.delete_*\"", ExpiresAt: renderNow.Add(5 * time.Minute)}

// With neither DISPLAY nor WAYLAND_DISPLAY, both calls fail with
// ErrNoDisplay before any dialog program runs.
func TestDialogWithoutDisplayFailsClosed(t *testing.T) {
	fake := newFakeZenity(t, "cancel")
	d := fakeDialog(t, fake)
	t.Setenv("DISPLAY", "")
	if a, err := d.Ask(context.Background(), confirmation); a != None || !errors.Is(err, ErrNoDisplay) {
		t.Errorf("Ask = %q, %v; want none, ErrNoDisplay", a, err)
	}
	if err := d.Show(context.Background(), challengeReq); !errors.Is(err, ErrNoDisplay) {
		t.Errorf("Show = %v; want ErrNoDisplay", err)
	}
	if err := d.Check(); !errors.Is(err, ErrNoDisplay) {
		t.Errorf("Check = %v", err)
	}
	if args := fake.argv(t); args != nil {
		t.Errorf("a dialog program ran: %q", args)
	}
	// Either display variable is enough to try.
	t.Setenv("WAYLAND_DISPLAY", "wayland-0")
	if a, err := d.Ask(context.Background(), confirmation); a != Deny || err != nil {
		t.Errorf("with WAYLAND_DISPLAY: Ask = %q, %v", a, err)
	}
}

func TestDialogWithoutProgramFailsClosed(t *testing.T) {
	d := fakeDialog(t, fakeZenity{})
	d.available = func() error { return errNoProgram }
	a, err := d.Ask(context.Background(), confirmation)
	if a != None || err == nil || !strings.Contains(err.Error(), "zenity") || errors.Is(err, ErrNoDisplay) {
		t.Errorf("Ask = %q, %v", a, err)
	}
	if err := d.Show(context.Background(), challengeReq); err == nil || !strings.Contains(err.Error(), "zenity") {
		t.Errorf("Show = %v", err)
	}
}

func TestDialogRejectsWrongKinds(t *testing.T) {
	fake := newFakeZenity(t, "deny")
	d := fakeDialog(t, fake)
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

// The buttons: Deny is OK (the default: Return), Cancel, Escape and
// closing deny, the allows are extra buttons that must be clicked.
func TestDialogAskMapsExits(t *testing.T) {
	offered := confirmation
	offered.AllowSession = true
	for _, tc := range []struct {
		mode  string
		req   Request
		want  Answer
		fails bool
	}{
		{"deny", confirmation, Deny, false},
		{"cancel", confirmation, Deny, false},
		{"allow", confirmation, Allow, false},
		{"session", confirmation, Deny, false}, // not offered: not an answer
		{"session", offered, AllowSession, false},
		{"fail", confirmation, None, true},
		// The display could not be reached: zenity exits as for Cancel,
		// but no human said no (a Deny would be recorded as theirs and
		// refuse the retry without asking).
		{"nodisplay", confirmation, None, true},
		{"qtnodisplay", confirmation, None, true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			fake := newFakeZenity(t, tc.mode)
			d := fakeDialog(t, fake)
			a, err := d.Ask(context.Background(), tc.req)
			if a != tc.want || (err != nil) != tc.fails {
				t.Errorf("Ask = %q, %v; want %q", a, err, tc.want)
			}
			want := []string{"--text-info", "--title=" + QuestionTitle, "--width=720", "--height=520",
				"--ok-label=Deny", "--cancel-label=Deny", "--extra-button=Allow once"}
			if tc.req.AllowSession {
				want = append(want, "--extra-button=Allow for this session")
			}
			if got := fake.argv(t); !slices.Equal(got, want) {
				t.Errorf("argv\n got %q\nwant %q", got, want)
			}
			text, _ := questionText(tc.req, renderNow, false)
			if stdin, _ := os.ReadFile(fake.stdin); string(stdin) != text {
				t.Errorf("stdin\n got %q\nwant %q", stdin, text)
			}
		})
	}
}

// When ctx ends, Ask answers None, and the dialog process is killed (the
// fake execs sleep, so its pid is the dialog's).
func TestDialogAskTimeoutKillsTheDialog(t *testing.T) {
	fake := newFakeZenity(t, "hang")
	d := fakeDialog(t, fake)
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

// Dialog programs come from system directories only: a zenity or qarma
// planted earlier on PATH, or in the home directory, is never run.
func TestDialogProgramsFromSystemDirectoriesOnly(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	planted := filepath.Join(home, ".local", "bin")
	if err := os.MkdirAll(planted, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"zenity", "qarma", "matedialog", "xclip"} {
		if err := os.WriteFile(filepath.Join(planted, name), []byte("#!/bin/sh\ntouch "+strconv.Quote(filepath.Join(home, "RAN"))+"\n"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", planted+string(os.PathListSeparator)+os.Getenv("PATH"))
	p, err := findSystemProgram("qarma", "zenity", "matedialog")
	if err == nil && strings.HasPrefix(p, home) {
		t.Fatalf("a planted program was chosen: %s", p)
	}
	if err == nil && !slices.ContainsFunc(systemDirs, func(d string) bool { return strings.HasPrefix(p, d+"/") || strings.HasPrefix(p, "/usr/") }) {
		t.Errorf("%s is not in a system directory", p)
	}
	// A system directory entry that is a symlink into the home directory
	// is refused too.
	old := systemDirs
	t.Cleanup(func() { systemDirs = old })
	sys := t.TempDir()
	if err := os.Symlink(filepath.Join(planted, "zenity"), filepath.Join(sys, "zenity")); err != nil {
		t.Fatal(err)
	}
	systemDirs = []string{sys}
	if p, err := findSystemProgram("zenity"); err == nil {
		t.Errorf("a link into the home directory was accepted: %s", p)
	}
	if _, err := os.Stat(filepath.Join(home, "RAN")); err == nil {
		t.Error("a planted program ran")
	}
}
