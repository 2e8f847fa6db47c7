package policy

import "testing"

// TestWrapKeepsTheTitle (issue 31, item 9): the name a client config
// gives a server is kept for people where the server's name drops some
// of it; nothing a log line must not hold is kept.
func TestWrapKeepsTheTitle(t *testing.T) {
	for name, want := range map[string]string{
		"notes-desktop":    "notes-desktop",
		"GitHub MCP":       "GitHub MCP",
		"fs":               "",
		"a\nb":             "",
		`say "hi"`:         "",
		string(rune(0x7f)): "",
	} {
		cfg, err := Wrap(Default(), name, []string{"npx", "server"})
		if err != nil {
			t.Fatal(err)
		}
		s := cfg.Servers[0]
		if s.Title != want {
			t.Errorf("Wrap(%q): Title %q, want %q", name, s.Title, want)
		}
		if label := s.Label(); want != "" && label != want || want == "" && label != s.Name {
			t.Errorf("Wrap(%q): Label %q", name, label)
		}
	}
	cfg, err := WrapRemote(Default(), "remote-docs", "https://mcp.example.com/mcp", "none", nil)
	if err != nil || cfg.Servers[0].Label() != "remote-docs" || cfg.Servers[0].Name != "remotedocs" {
		t.Errorf("WrapRemote: %+v %v", cfg.Servers, err)
	}
}

// A wrapped server's title reaches the compiled policy, which the guard
// names it by to people; a server without one is named by its name.
func TestPolicyTitles(t *testing.T) {
	cfg, err := Wrap(Default(), "notes-desktop", []string{"npx", "server"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Title(cfg.Servers[0].Name); got != "notes-desktop" {
		t.Errorf("Title(%q) = %q", cfg.Servers[0].Name, got)
	}
	if got := p.Title("fs"); got != "fs" {
		t.Errorf("Title(fs) = %q", got)
	}
}
