package shell

// Programs that run commands to reach another machine or to serve one:
// socat and netcat, ssh's kin (sshfs, mosh, check_by_ssh), D-Bus
// transports, backup and download tools with command hooks, containers.

import (
	"strings"
)

// busctlCommand: busctl --address=unixexec:path=P,argv1=A,... starts P
// with those words.
func busctlCommand(s *Script, c *invocation) {
	found, ok := s.given(c, map[string]string{"address": "address"}, nil)
	if !ok {
		return
	}
	for _, o := range found {
		v := o.value
		if v.dynamic {
			s.cannot(c, "an address that is not static: "+s.source(v))
			return
		}
		for addr := range strings.SplitSeq(v.text, ";") {
			rest, ok := strings.CutPrefix(addr, "unixexec:")
			if !ok {
				continue
			}
			if strings.ContainsAny(rest, `%\`) {
				s.cannot(c, "a unixexec: address with escapes: "+addr)
				return
			}
			var words []field
			for kv := range strings.SplitSeq(rest, ",") {
				k, val, _ := strings.Cut(kv, "=")
				switch {
				case k == "path":
					words = append([]field{{text: val, src: val}}, words...)
				case strings.HasPrefix(k, "argv") && k != "argv0":
					words = append(words, field{text: val, src: val})
				}
			}
			if len(words) > 0 {
				s.run(c, words, "busctl --address=unixexec")
			}
		}
	}
}

// socatCommand: socat's addresses EXEC:CMD (words, run by socat) and
// SYSTEM:CMD and SHELL:CMD (through sh -c) run commands; ncat and nc run
// -e PROG, -c/--sh-exec CMD through the shell, and --lua-exec FILE.
func socatCommand(s *Script, c *invocation) {
	for _, a := range c.args {
		if a.dynamic {
			if mayBeOption(a) || strings.Contains(strings.ToLower(a.lead), "exec") || strings.Contains(strings.ToLower(a.lead), "system") || a.lead == "" {
				s.cannot(c, "an address that is not static: "+s.source(a))
				return
			}
			continue
		}
		if strings.HasPrefix(a.text, "-") {
			continue
		}
		kind, cmd, ok := strings.Cut(a.text, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(kind) {
		case "exec", "system", "shell":
		default:
			continue
		}
		// Address options follow a comma; a command with a quote, an
		// escape or a comma of its own is socat's to split.
		if i := strings.IndexByte(cmd, ','); i >= 0 {
			cmd = cmd[:i]
		}
		if strings.ContainsAny(a.text, `"'\[{`) {
			s.cannot(c, "an address socat splits its own way: "+a.text)
			return
		}
		label := "socat " + strings.ToLower(kind) + ":"
		if strings.EqualFold(kind, "exec") {
			var words []field
			for w := range strings.FieldsSeq(cmd) {
				words = append(words, field{text: w, src: w})
			}
			if len(words) > 0 {
				s.run(c, words, label)
			}
			continue
		}
		s.runScript(c, field{text: cmd, src: cmd}, label)
	}
}

// netcatCommand: nc -e PROG and ncat --exec PROG run PROG; -c and
// --sh-exec run a command line; --lua-exec runs Lua.
func netcatCommand(s *Script, c *invocation) {
	found, ok := s.given(c, map[string]string{"exec": "e", "sh-exec": "c", "lua-exec": "lua-exec"},
		map[byte]string{'e': "e", 'c': "c"})
	if !ok {
		return
	}
	for _, o := range found {
		switch o.name {
		case "lua-exec":
			s.launchedFile(c, o.value, nil)
			s.addCode(c, "--lua-exec", o.value.text, o.value.dynamic)
		default:
			s.runScript(c, o.value, c.name+" -"+o.name)
		}
	}
}

// sshfsCommand: sshfs -o OPT[,OPT]...: ssh_command= runs a command
// instead of ssh, and ssh's own options pass through (ProxyCommand=).
func sshfsCommand(s *Script, c *invocation) {
	found, ok := s.given(c, map[string]string{"ssh_command": "ssh_command"}, map[byte]string{'o': "o"})
	if !ok {
		return
	}
	for _, o := range found {
		if o.value.dynamic {
			s.cannot(c, "an option that is not static: "+s.source(o.value))
			return
		}
		if o.name == "ssh_command" {
			s.runScript(c, o.value, "sshfs -o ssh_command")
			continue
		}
		for opt := range strings.SplitSeq(o.value.text, ",") {
			key, value := cutSSHOption(opt)
			switch k := strings.ToLower(key); {
			case k == "ssh_command" || k == "ssh_cmd":
				s.runScript(c, field{text: value, src: value}, "sshfs -o ssh_command")
			case sshRunKeys[k]:
				s.runScript(c, field{text: value, src: value}, "sshfs -o "+key)
			case k == "include" || k == "pkcs11provider" || k == "securitykeyprovider" || k == "xauthlocation" || k == "match":
				s.cannot(c, "an ssh option that loads code or configuration: "+key)
				return
			}
		}
	}
}

// hgCommand: Mercurial's --config KEY=VALUE: an alias of ! runs a
// command line (and any alias is a command the analyser cannot see),
// hooks, the editor, ssh and merge tools run commands, and extensions are
// Python; --ssh and --remotecmd run commands too. Any other key it does
// not know leaves the line unresolved, as git's do.
func hgCommand(s *Script, c *invocation) {
	found, ok := s.given(c, map[string]string{"config": "config", "ssh": "ssh", "remotecmd": "remotecmd"},
		map[byte]string{'e': "ssh"})
	if !ok {
		return
	}
	for _, o := range found {
		if o.name != "config" {
			s.runScript(c, o.value, "hg --"+o.name)
			continue
		}
		if o.value.dynamic {
			s.cannot(c, "configuration that is not static: "+s.source(o.value))
			return
		}
		key, value, _ := strings.Cut(o.value.text, "=")
		section, name, _ := strings.Cut(strings.ToLower(key), ".")
		switch {
		case section == "alias" && strings.HasPrefix(value, "!"):
			s.runScript(c, field{text: value[1:], src: value}, "hg --config "+key)
			s.cannot(c, "an alias, which runs under a name the analyser cannot see: "+key)
		case section == "alias":
			s.cannot(c, "an alias, which runs under a name the analyser cannot see: "+key)
		case section == "hooks", section == "ui" && (name == "editor" || name == "ssh" || name == "remotecmd" || name == "merge"),
			section == "pager" && name == "pager", section == "merge-tools", section == "diff-tools", section == "extdiff":
			s.runScript(c, field{text: strings.TrimPrefix(value, "!"), src: value}, "hg --config "+key)
		case section == "ui" && (name == "username" || name == "verbose" || name == "quiet" || name == "color" ||
			name == "paginate" || name == "interactive"), section == "color", section == "phases", section == "diff" ||
			section == "format" || section == "progress" || section == "experimental" && !strings.Contains(name, "cmd"):
		default:
			s.cannot(c, "a configuration key the analyser does not know: "+key)
			return
		}
	}
}

// moshCommand: mosh [options] HOST [--] [COMMAND...] runs COMMAND there;
// --ssh and --server run commands (launchers).
func moshCommand(s *Script, c *invocation) {
	moshLauncher.follow(s, c)
	r := moshOpts.read(c.args)
	if r.problem != "" {
		return // what it found is enough: the options run nothing more
	}
	ops := r.operands
	if len(ops) > 1 {
		s.run(c, c.args[ops[1]:], "mosh")
	}
}

var moshLauncher = launch("script: ssh server")
var moshOpts = opts("+client: server: predict: o|predict-overwrite a n family: 4 6 p|port: bind-server: ssh: no-ssh-pty " +
	"no-init local experimental-remote-ip: help version")

// wgetCommand: wget --use-askpass=CMD runs CMD; -e (--execute) takes a
// .wgetrc command, of which use_askpass runs one too; --config reads a
// file of them.
func wgetCommand(s *Script, c *invocation) {
	found, ok := s.given(c, map[string]string{"use-askpass": "use-askpass", "execute": "e", "config": "config"},
		map[byte]string{'e': "e"})
	if !ok {
		return
	}
	for _, o := range found {
		switch o.name {
		case "use-askpass":
			s.runScript(c, o.value, "wget --use-askpass")
		case "config":
			s.launchedFile(c, o.value, nil)
		case "e":
			if o.value.dynamic {
				s.cannot(c, "a .wgetrc command that is not static: "+s.source(o.value))
				return
			}
			name, value, _ := strings.Cut(o.value.text, "=")
			if strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(name)) == "useaskpass" {
				s.runScript(c, field{text: strings.TrimSpace(value), src: value}, "wget -e use_askpass")
			}
		}
	}
}

// resticCommand: restic --password-command CMD runs CMD (so does
// RESTIC_PASSWORD_COMMAND), and -o rclone.program, rclone.args,
// sftp.command and sftp.args set the commands of its backends.
func resticCommand(s *Script, c *invocation) {
	found, ok := s.given(c, map[string]string{"password-command": "password-command", "option": "o"},
		map[byte]string{'o': "o"})
	if !ok {
		return
	}
	for _, o := range found {
		switch {
		case o.name == "password-command":
			s.runScript(c, o.value, "restic --password-command")
		case o.value.dynamic:
			s.cannot(c, "an option that is not static: "+s.source(o.value))
			return
		default:
			key, value, _ := strings.Cut(o.value.text, "=")
			switch strings.ToLower(key) {
			case "rclone.program", "sftp.command":
				s.runScript(c, field{text: value, src: value}, "restic -o "+key)
			case "rclone.args", "sftp.args":
				s.cannot(c, "arguments of a backend's command, which restic adds to it: "+key)
				return
			}
		}
	}
}

// checkBySSHCommand: the Nagios plugin check_by_ssh runs -C COMMAND
// remotely, through ssh with -o options.
func checkBySSHCommand(s *Script, c *invocation) {
	found, ok := s.given(c, map[string]string{"command": "C", "ssh-option": "o"}, map[byte]string{'C': "C", 'o': "o"})
	if !ok {
		return
	}
	var o []option
	for _, f := range found {
		switch {
		case f.name == "C":
			s.runScript(c, f.value, "check_by_ssh -C")
		default:
			o = append(o, f)
		}
	}
	sshConfig(s, c, o)
}

// lxcCommand: lxc exec [REMOTE:]INSTANCE [--] COMMAND runs COMMAND in the
// instance.
func lxcCommand(s *Script, c *invocation) {
	if len(c.args) == 0 || c.args[0].dynamic || c.args[0].text != "exec" {
		return
	}
	inner := &invocation{name: "lxc exec", args: c.args[1:], redirs: c.redirs, via: c.via, depth: c.depth}
	r, ok := s.options(inner, lxcExecOpts)
	if !ok {
		return
	}
	if i := r.first(len(inner.args)) + 1; i < len(inner.args) {
		rest := inner.args[i:]
		if !rest[0].dynamic && rest[0].text == "--" {
			rest = rest[1:]
		}
		if len(rest) > 0 {
			s.run(inner, rest, "lxc exec")
		}
	}
}

var lxcExecOpts = opts("cwd: env: force-interactive force-noninteractive group: mode: n t T user: project: q|quiet debug " +
	"verbose force-local h|help")
