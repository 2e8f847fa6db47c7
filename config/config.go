package config

import (
	"maps"
	"slices"
	"strings"
)

// Config is one aqlguard configuration file, decoded and checked.
// Every field mirrors a documented key in config.example.toml.
type Config struct {
	// Mode selects the endpoint surface: semantic, single, all or passthrough.
	Mode string `toml:"mode"`
	// Agent names the principal that owns blocks, step counters and audit
	// entries. Set by the human (config or --agent), never by the model.
	Agent string `toml:"agent"`
	// StateDir holds the bbolt database (default $XDG_STATE_HOME/aqlguard).
	StateDir string `toml:"state_dir"`
	// StateLockTimeout bounds how long a call waits for the state database
	// when another aqlguard process holds it; then the call fails closed.
	StateLockTimeout Duration `toml:"state_lock_timeout"`

	Limits  Limits                   `toml:"limits"`
	Audit   Audit                    `toml:"audit"`
	Safety  Safety                   `toml:"safety"`
	Flows   Flows                    `toml:"flows"`
	Agents  map[string]AgentOverride `toml:"agents"`
	Verify  Verify                   `toml:"verify"`
	Serve   Serve                    `toml:"serve"`
	State   State                    `toml:"state"`
	Servers []Server                 `toml:"servers"`

	// Locked, in the managed policy file only, lists the keys the user's
	// file may not set at all ("safety.auto_approve", "verify",
	// "servers"); see managed.go.
	Locked []string `toml:"locked"`

	// Managed is the managed policy layer under this configuration (nil
	// without one): Overlay sets it, and Compile reads its rules as the
	// managed layer's, which nothing in this file can weaken.
	Managed *Config `toml:"-"`

	// NotInEffect are the settings of the user's file that the managed
	// layer does not let take effect (Overlay), each with its line.
	NotInEffect Errors `toml:"-"`

	// Path is the file this config was read from ("" for embedded defaults).
	Path string `toml:"-"`
	// lines maps the key paths the file set to their line in it (0 for
	// a setting given on the command line): for line-accurate messages,
	// and for what a managed layer lets take effect. Unexported, so that
	// the exported fields are the file's settings and nothing else.
	lines map[string]int
}

// Clone copies what policy.Overlay changes, so the user's Config stays as read.
func (c *Config) Clone() *Config {
	out := *c
	out.Servers = slices.Clone(c.Servers)
	if c.Agents != nil {
		out.Agents = maps.Clone(c.Agents)
	}
	if c.Audit.Forward != nil {
		f := *c.Audit.Forward
		out.Audit.Forward = &f
	}
	out.lines = maps.Clone(c.lines)
	return &out
}

// Wrote reports whether the file set key, or a key under it, and the
// first line where it did (0 for a setting given on the command line).
func (c *Config) Wrote(key string) (int, bool) {
	line, found := 0, false
	for k, at := range c.lines {
		if k == key || under(k, key) {
			if !found || at < line {
				line, found = at, true
			}
		}
	}
	return line, found
}

// KeysInOrder are the keys the file set, in file order.
func (c *Config) KeysInOrder() []string {
	keys := slices.Collect(maps.Keys(c.lines))
	slices.SortFunc(keys, func(a, b string) int {
		if d := c.lines[a] - c.lines[b]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return keys
}

// SetOnCommandLine records that key was set by a command-line flag
// (--agent, --state-dir): for a managed layer, a flag is the user's
// setting as much as the file's.
func (c *Config) SetOnCommandLine(key string) {
	c.SetLine(key, 0)
}

// InheritsShipped reports whether the shipped rules are in force under cfg.
// Without a managed layer the file says (inherit, default true). Under
// one, the managed file says: a user's inherit = false is not in effect
// (Overlay reports it), and where the managed file turns them off, a
// user's inherit = true, which is stricter, turns them on again.
func (c *Config) InheritsShipped() bool {
	if c.Managed == nil {
		return c.Safety.Inherits()
	}
	return c.Managed.Safety.Inherits() || c.Safety.Inherit != nil && *c.Safety.Inherit
}

// InheritOff says which file turned the shipped rules off (inherit =
// false), with its line, for `policy check` to say so; ok is false when
// they are in force.
func (c *Config) InheritOff() (where Error, ok bool) {
	if c.InheritsShipped() {
		return Error{}, false
	}
	f, msg := c, "inherit = false: the rules aqlguard ships ("+ShippedName+") are not in force, only what the file says"
	if c.Managed != nil {
		f, msg = c.Managed, "inherit = false in the managed policy: the rules aqlguard ships ("+ShippedName+") are not in force"
	}
	return Error{File: f.Path, Key: "safety.inherit", Line: f.lines["safety.inherit"], Msg: msg}, true
}

// under reports whether key is a key inside table ("verify.channel"
// under "verify", "servers[0].name" under "servers").
func under(key, table string) bool {
	return strings.HasPrefix(key, table) && len(key) > len(table) && (key[len(table)] == '.' || key[len(table)] == '[')
}

// ShippedName names the shipped rules' file in origins and messages.
const ShippedName = "default.toml"

// Line is the line where the file set key (0 for a setting given on the
// command line); ok is false when nothing set it.
func (c *Config) Line(key string) (line int, ok bool) {
	line, ok = c.lines[key]
	return line, ok
}

// Lines are the keys the file set and their lines, a copy.
func (c *Config) Lines() map[string]int { return maps.Clone(c.lines) }

// SetLine records that the file set key at line (the parser's record).
func (c *Config) SetLine(key string, line int) {
	if c.lines == nil {
		c.lines = map[string]int{}
	}
	c.lines[key] = line
}

// Forget drops key, and every key under it, from what the file set.
func (c *Config) Forget(key string) {
	for k := range c.lines {
		if k == key || under(k, key) {
			delete(c.lines, k)
		}
	}
}

// ClearLines forgets where every key was set, as for a Config built in
// code.
func (c *Config) ClearLines() { c.lines = nil }
