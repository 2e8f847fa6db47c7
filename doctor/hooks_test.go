package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/clientconfig"
)

// Doctor says, per client found, whether its hook is installed and runs
// this binary; a client not on this machine is not mentioned.
func TestHookChecks(t *testing.T) {
	home := t.TempDir()
	env := clientconfig.Env{Home: home}
	self := "/opt/aqlguard/aqlguard"
	for _, d := range []string{".claude", ".gemini"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	files := clientconfig.HookFiles(env)
	data, _, err := clientconfig.InstallHooks(files[0], []byte("{}\n"), self, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[0].Path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got := map[string]Check{}
	for _, c := range hooks(Input{Env: env, Self: self}) {
		got[c.Name] = c
	}
	if c := got["hooks claude-code"]; c.Level != OK || !strings.Contains(c.Detail, "PreToolUse") {
		t.Errorf("installed: %+v", c)
	}
	if c := got["hooks gemini"]; c.Level != Warn || !strings.Contains(c.Detail, "not installed") {
		t.Errorf("not installed: %+v", c)
	}
	if _, ok := got["hooks cursor"]; ok {
		t.Error("a client not on this machine is reported")
	}
	for _, c := range hooks(Input{Env: env, Self: "/usr/bin/aqlguard"}) {
		if c.Name == "hooks claude-code" && (c.Level != Warn || !strings.Contains(c.Detail, "not this binary")) {
			t.Errorf("another binary's hook: %+v", c)
		}
	}
}
