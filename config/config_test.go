package config

import (
	"slices"
	"testing"
)

// TestWhereTheFileSetKeys: what the parser records of a file's keys is
// read back by key and by table, in file order, and survives Clone
// without being shared.
func TestWhereTheFileSetKeys(t *testing.T) {
	var c Config
	for k, n := range map[string]int{"agent": 1, "verify.channel": 4, "verify.command": 5, "servers[0].name": 8, "servers[0].command": 9} {
		c.SetLine(k, n)
	}
	for _, tc := range []struct {
		key  string
		line int
		ok   bool
	}{
		{"agent", 1, true},
		{"verify", 4, true}, // a table: its first key
		{"verify.command", 5, true},
		{"servers", 8, true},
		{"serve", 0, false}, // not servers' prefix: a key is under a table at a '.' or '['
		{"state", 0, false},
	} {
		if line, ok := c.Wrote(tc.key); line != tc.line || ok != tc.ok {
			t.Errorf("Wrote(%q) = %d, %v; want %d, %v", tc.key, line, ok, tc.line, tc.ok)
		}
	}
	if got := c.KeysInOrder(); !slices.Equal(got, []string{"agent", "verify.channel", "verify.command", "servers[0].name", "servers[0].command"}) {
		t.Errorf("KeysInOrder() = %v", got)
	}
	d := c.Clone()
	c.Forget("verify")
	if _, ok := c.Wrote("verify"); ok {
		t.Error("Forget(verify) left a key under verify")
	}
	if line, ok := d.Line("verify.channel"); !ok || line != 4 {
		t.Errorf("the clone lost verify.channel when the original forgot it: %d, %v", line, ok)
	}
	c.SetOnCommandLine("agent")
	if line, ok := c.Line("agent"); !ok || line != 0 {
		t.Errorf("SetOnCommandLine(agent): Line = %d, %v; want 0, true", line, ok)
	}
	c.ClearLines()
	if len(c.Lines()) != 0 {
		t.Errorf("ClearLines left %v", c.Lines())
	}
}

// TestInheritOff says which file turned the shipped rules off, with the
// line; the user's inherit = false under a managed layer that keeps
// them is not in effect.
func TestInheritOff(t *testing.T) {
	no, yes := false, true
	user := &Config{Path: "user.toml", Safety: Safety{Inherit: &no}}
	user.SetLine("safety.inherit", 3)
	if where, off := user.InheritOff(); !off || where.File != "user.toml" || where.Line != 3 {
		t.Errorf("user's inherit = false: %+v, %v", where, off)
	}
	managed := &Config{Path: "managed.toml", Safety: Safety{Inherit: &yes}}
	user.Managed = managed
	if where, off := user.InheritOff(); off {
		t.Errorf("under a managed layer that keeps them, the user's inherit = false turned the shipped rules off: %+v", where)
	}
	managed.Safety.Inherit = &no
	managed.SetLine("safety.inherit", 7)
	if where, off := user.InheritOff(); !off || where.File != "managed.toml" || where.Line != 7 {
		t.Errorf("managed inherit = false: %+v, %v", where, off)
	}
}
