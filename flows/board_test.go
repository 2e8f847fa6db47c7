package flows

import (
	"os"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/results"
)

// Two processes of one client: what one session reads counts in the
// other's, a clear by either clears both, and a damaged board counts as
// untrusted content, never as nothing.
func TestBoardSharesWhatAClientsProcessesRead(t *testing.T) {
	dir := t.TempDir()
	open := func(self string) *Board {
		b, err := OpenBoard(dir, "agent", "1234-99", self)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	fs, web := open("fs-process"), open("web-process")
	if fs.Path() != web.Path() {
		t.Fatalf("two boards for one client: %s, %s", fs.Path(), web.Path())
	}
	var a, b Session
	a.Share(fs)
	b.Share(web)
	pol := compiled(t, "")
	a.Observe(Read{Method: results.ToolsCall, Server: "fs", Tool: "read_file", Raw: text("aws_access_key_id = " + awsKeyID), At: at}, pol)
	b.Observe(Read{Method: results.ToolsCall, Server: "web", Tool: "fetch", Effects: policy.Effects(0).With(policy.EffectSend),
		Raw: text("a page"), At: at}, pol)

	f := b.Flow(map[string]any{"url": "https://paste.example/"})
	if len(f.Private) != 1 || !strings.Contains(f.Private[0], "in the result of fs.read_file (through another aqlguard of this client") {
		t.Errorf("the web process's session: private %q", f.Private)
	}
	if len(f.Untrusted) != 1 || !strings.Contains(f.Untrusted[0], "what web.fetch fetched") {
		t.Errorf("its own untrusted read: %q", f.Untrusted)
	}
	raw, _ := os.ReadFile(fs.Path())
	if strings.Contains(string(raw), awsKeyID) {
		t.Fatal("the board holds the secret")
	}
	if info, _ := os.Stat(fs.Path()); info.Mode().Perm() != 0o600 {
		t.Errorf("board mode %v", info.Mode().Perm())
	}

	// The human clears the session in the web process: the fs process's
	// session is cleared too.
	b.Clear()
	if f := a.Flow(nil); len(f.Private) != 0 || len(f.Untrusted) != 0 {
		t.Errorf("after a clear in the other process: %+v", f)
	}
	if f := b.Flow(nil); len(f.Private) != 0 || len(f.Untrusted) != 0 {
		t.Errorf("after its own clear: %+v", f)
	}

	// A line that is no mark: the board's marks are unknown.
	f2, err := os.OpenFile(fs.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f2.WriteString("garbage\n"); err != nil {
		t.Fatal(err)
	}
	f2.Close()
	var c Session
	c.Share(open("third"))
	if f := c.Flow(nil); len(f.Untrusted) != 1 || !strings.Contains(f.Untrusted[0], "that is not a mark") {
		t.Errorf("a damaged board: %+v", f)
	}
	c.Clear()
	if f := c.Flow(nil); len(f.Untrusted) != 0 {
		t.Errorf("a clear after the damage: %+v", f)
	}

}
