package shell

// Developers' and operators' tools that run commands given to them:
// compilers' wrappers, build tools' command modes, test runners,
// toolchain managers, automation (ansible, fail2ban, task), AI agents.

import (
	"strings"
)

// taskCommand: taskwarrior's task execute COMMAND runs COMMAND through
// the shell (after any filter words).
func taskCommand(s *Script, c *invocation) {
	for i, a := range c.args {
		if a.dynamic {
			s.cannot(c, "a word that is not static: "+s.source(a))
			return
		}
		if a.text == "execute" {
			if i+1 < len(c.args) {
				s.runJoined(c, c.args[i+1:], "task execute")
			}
			return
		}
	}
}

// xdotoolCommand: xdotool exec CMD runs CMD; type and key type keys into
// other programs, and a script file or - runs xdotool commands the line
// does not hold.
func xdotoolCommand(s *Script, c *invocation) {
	for i, a := range c.args {
		if a.dynamic {
			s.cannot(c, "a word that is not static: "+s.source(a))
			return
		}
		switch a.text {
		case "exec":
			rest := c.args[i+1:]
			for len(rest) > 0 && strings.HasPrefix(rest[0].text, "--") {
				if rest[0].text == "--args" || rest[0].text == "--terminator" {
					rest = rest[min(2, len(rest)):]
					continue
				}
				rest = rest[1:]
			}
			if len(rest) > 0 {
				s.run(c, rest, "xdotool exec")
			}
			return
		case "type", "key", "keydown", "keyup", "-":
			s.cannot(c, "xdotool "+a.text+" types keys into other programs, or reads commands the line does not hold")
			return
		}
	}
}

// codexCommand: codex sandbox (linux|macos|landlock|seatbelt) [options]
// [--] COMMAND runs COMMAND; codex exec, and codex given a prompt, is an
// agent that runs the commands it chooses.
func codexCommand(s *Script, c *invocation) {
	args := c.args
	if len(args) == 0 {
		s.cannot(c, "an AI agent, which runs the commands it chooses")
		return
	}
	if args[0].dynamic {
		s.cannot(c, "a word that is not static: "+s.source(args[0]))
		return
	}
	switch args[0].text {
	case "sandbox", "debug":
		rest := args[1:]
		if len(rest) > 0 && !mayBeOption(rest[0]) {
			rest = rest[1:] // the platform
		}
		for i, a := range rest {
			if a.dynamic {
				s.cannot(c, "a word that is not static: "+s.source(a))
				return
			}
			if a.text == "--" {
				rest = rest[i+1:]
				break
			}
			if !strings.HasPrefix(a.text, "-") {
				rest = rest[i:]
				break
			}
		}
		if len(rest) > 0 {
			s.run(c, rest, "codex sandbox")
		}
	case "login", "logout", "completion", "help", "--help", "-h", "--version", "-V", "mcp", "mcp-server", "app-server", "features":
	default:
		s.cannot(c, "an AI agent, which runs the commands it chooses")
	}
}

// cdistCommand: cdist shell [-s SHELL] runs SHELL (or the user's)
// interactively.
func cdistCommand(s *Script, c *invocation) {
	if len(c.args) == 0 || c.args[0].dynamic || c.args[0].text != "shell" {
		return
	}
	for i, a := range c.args[1:] {
		if !a.dynamic && (a.text == "-s" || a.text == "--shell") && i+2 < len(c.args) {
			s.run(c, []field{c.args[i+2]}, "cdist shell")
			return
		}
	}
	s.stdin(c.redirs, c.under("cdist shell"), c.depth, bashFlavour.lang)
}

// ansibleTestCommand: ansible-test shell is an interactive shell.
func ansibleTestCommand(s *Script, c *invocation) {
	if len(c.args) > 0 && !c.args[0].dynamic && c.args[0].text == "shell" {
		s.stdin(c.redirs, c.under("ansible-test shell"), c.depth, bashFlavour.lang)
	}
}

// ansibleCommand: ansible HOSTS -m MODULE -a ARGS runs a module (command
// by default): command, shell and raw run their arguments as a command
// line; another module's arguments are code of ansible's.
func ansibleCommand(s *Script, c *invocation) {
	found, ok := s.given(c, map[string]string{"module-name": "m", "args": "a"}, map[byte]string{'m': "m", 'a': "a"})
	if !ok {
		return
	}
	module := "command"
	var margs []field
	for _, o := range found {
		switch {
		case o.name == "m":
			module = strings.TrimPrefix(strings.TrimPrefix(o.value.text, "ansible.builtin."), "ansible.legacy.")
		case o.name == "a":
			margs = append(margs, o.value)
		}
	}
	for _, a := range margs {
		switch module {
		case "command", "shell", "raw", "win_shell", "win_command", "script":
			s.runScript(c, a, "ansible -m "+module)
		case "ping", "setup", "gather_facts":
		default:
			s.codeOf(c, "-m "+module, a)
		}
	}
}

// gccCommand: gcc -wrapper PROG,ARGS runs its tools under PROG; -B
// changes where it finds them, -specs= may run anything, a plugin is
// code, @FILE reads more options from a file.
func gccCommand(s *Script, c *invocation) {
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if a.dynamic {
			if mayBeOption(a) {
				s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
				return
			}
			continue
		}
		t := a.text
		switch {
		case t == "-wrapper" && i+1 < len(c.args):
			v := c.args[i+1]
			i++
			if v.dynamic {
				s.cannot(c, "-wrapper of a program that is not static: "+s.source(v))
				return
			}
			var words []field
			for w := range strings.SplitSeq(v.text, ",") {
				words = append(words, field{text: w, src: w})
			}
			s.run(c, words, c.name+" -wrapper")
		case strings.HasPrefix(t, "-fplugin="):
			s.addCode(c, "-fplugin", t[len("-fplugin="):], true)
		case strings.HasPrefix(t, "-B"), strings.HasPrefix(t, "-specs"), strings.HasPrefix(t, "--specs"), strings.HasPrefix(t, "@"):
			s.cannot(c, "an option that changes the programs it runs, or reads more options from a file: "+t)
			return
		}
	}
}

// cmakeCommand: cmake -E env|chdir|time ... runs a command, cmake -P
// FILE runs a script file.
func cmakeCommand(s *Script, c *invocation) {
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if a.dynamic {
			if mayBeOption(a) {
				s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
				return
			}
			continue
		}
		switch a.text {
		case "-P":
			if i+1 < len(c.args) {
				s.launchedFile(c, c.args[i+1], nil)
			}
			return
		case "-E":
			rest := c.args[i+1:]
			if len(rest) == 0 || rest[0].dynamic {
				return
			}
			switch rest[0].text {
			case "time":
				s.run(c, rest[1:], "cmake -E time")
			case "chdir":
				if len(rest) > 2 {
					s.run(c, rest[2:], "cmake -E chdir")
				}
			case "env":
				k := 1
				for k < len(rest) && (strings.HasPrefix(rest[k].text, "-") || isAssignment(rest[k])) {
					if rest[k].text == "--" {
						k++
						break
					}
					k++
				}
				if k < len(rest) {
					s.run(c, rest[k:], "cmake -E env")
				}
			}
			return
		}
	}
}

// dotnetCommand: dotnet fsi reads F# from stdin or a script file.
func dotnetCommand(s *Script, c *invocation) {
	if len(c.args) == 0 || c.args[0].dynamic || c.args[0].text != "fsi" {
		return
	}
	for _, a := range c.args[1:] {
		if !mayBeOption(a) {
			s.launchedFile(c, a, nil)
			return
		}
	}
	s.stdinCode(c, nil)
}

// csvtoolCommand: csvtool call COMMAND runs COMMAND through the shell for
// each row.
func csvtoolCommand(s *Script, c *invocation) {
	for i, a := range c.args {
		if !a.dynamic && a.text == "call" && i+1 < len(c.args) {
			s.runScript(c, c.args[i+1], "csvtool call")
			return
		}
		if a.dynamic && i+1 < len(c.args) {
			s.cannot(c, "a word that is not static: "+s.source(a))
			return
		}
	}
}

// fail2banCommand: fail2ban-client set JAIL action ACT actionban CMD (and
// the other action* commands) sets a command fail2ban runs.
func fail2banCommand(s *Script, c *invocation) {
	for i, a := range c.args {
		if a.dynamic {
			s.cannot(c, "a word that is not static: "+s.source(a))
			return
		}
		switch a.text {
		case "-c", "--conf":
			// A directory of configuration whose actions run commands.
			if i+1 < len(c.args) {
				s.runsDir(c.args[i+1])
			}
		case "actionban", "actionunban", "actionstart", "actionstop", "actioncheck", "actionflush", "actionrepair",
			"actionreload", "actionrepair_on_unban":
			if i+1 < len(c.args) {
				s.runJoined(c, c.args[i+1:], "fail2ban-client "+a.text)
			}
			return
		}
	}
}

// xdgUserDirCommand: xdg-user-dir NAME is sh's eval of echo
// ${XDG_NAME_DIR:-$HOME}: the name is read as part of a script.
func xdgUserDirCommand(s *Script, c *invocation) {
	if len(c.args) == 0 {
		return
	}
	if c.args[0].dynamic {
		s.cannot(c, "a name that is not static, which it evaluates as a script: "+s.source(c.args[0]))
		return
	}
	s.script("echo ${XDG_"+c.args[0].text+"_DIR:-$HOME}", c.under("xdg-user-dir"), c.depth+1)
}

// gtesterCommand: gtester runs each of its operands as a test program.
func gtesterCommand(s *Script, c *invocation) {
	for _, a := range c.args {
		if mayBeOption(a) {
			if a.dynamic {
				s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
				return
			}
			continue
		}
		s.run(c, []field{a}, "gtester")
	}
}

// rustupCommand: rustup run TOOLCHAIN COMMAND runs COMMAND; rustup
// toolchain link NAME DIR makes DIR's programs the toolchain's.
func rustupCommand(s *Script, c *invocation) {
	var words []field
	for _, a := range c.args {
		if a.dynamic && mayBeOption(a) {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return
		}
		if !mayBeOption(a) {
			words = append(words, a)
		}
	}
	switch {
	case len(words) >= 3 && words[0].text == "run":
		i := 0
		for i < len(c.args) && c.args[i].text != words[1].text {
			i++
		}
		if i+1 < len(c.args) {
			s.run(c, c.args[i+1:], "rustup run")
		}
	case len(words) >= 4 && words[0].text == "toolchain" && words[1].text == "link":
		s.runsDir(words[3])
	}
}

// runsDir notes a directory whose programs the line runs: a file the
// line writes in it makes the line unresolved (files.go).
func (s *Script) runsDir(f field) { s.runs(f) }
