package shell

import (
	"strings"
)

// assigned follows a variable given to the environment of commands (x=1
// cmd, export x=1, env x=1 cmd, sudo x=1 cmd): programs run the value of
// some (GIT_SSH_COMMAND, EDITOR, PAGER), read as a script; others change
// what a command runs in ways the line does not show (PATH, LD_PRELOAD,
// BASH_ENV, exported functions, git configuration), and leave it
// unresolved. Other variables are data.
//
// This is a list of the variables known to run code, not a closed
// world: a program may read a variable of its own that runs something.
func (s *Script) assigned(name string, value field, via []string, depth int) {
	switch {
	case envScripts[name]:
		v := value
		if name == "LESSOPEN" || name == "LESSCLOSE" {
			v.text = strings.TrimLeft(v.text, "|")
		}
		s.scriptField(v, append(via[:len(via):len(via)], name+"="), depth, name+" that is not static")
	case envExpanded[name]:
		// A shell expands the value ($(…) runs) before it uses it.
		if value.dynamic || strings.ContainsAny(value.text, "$`") {
			s.unresolved(name + " holds an expansion a shell performs when it reads it: " + s.source(value))
		}
	case name == "LESS":
		// less's options: +CMD runs a command of less's, -k a key file.
		if value.dynamic || strings.Contains(value.text, "+") || lessKeyFile(value.text) {
			s.unresolved("LESS holds options that can run commands (+CMD, a key file): " + s.source(value))
		}
	case name == "KUBECONFIG":
		// Files whose users can run commands (exec credential plugins):
		// not ours to read, unless the line wrote them.
		for f := range strings.SplitSeq(value.text, ":") {
			if !value.dynamic && f != "" {
				s.runs(field{text: f})
			}
		}
	case name == "PATH":
		if !pathOnlyAdds(value) {
			s.unresolved("PATH puts directories before the system's, where a command's name may find another program: " + s.source(value))
		}
	case envHidden[name]:
		s.unresolved(name + " changes what commands run, in a way the analyser cannot follow")
	default:
		for _, p := range envHiddenPrefixes {
			if strings.HasPrefix(name, p) {
				s.unresolved(name + " changes what commands run, in a way the analyser cannot follow")
				return
			}
		}
	}
}

// envScripts are variables whose value programs run as a command.
var envScripts = set2(`GIT_SSH_COMMAND GIT_SSH GIT_PAGER GIT_EDITOR GIT_SEQUENCE_EDITOR GIT_EXTERNAL_DIFF GIT_PROXY_COMMAND
	GIT_ASKPASS SSH_ASKPASS SUDO_ASKPASS EDITOR VISUAL PAGER MANPAGER SYSTEMD_PAGER SYSTEMD_EDITOR SUDO_EDITOR FCEDIT
	RSYNC_RSH CVS_RSH SVN_SSH SVN_EDITOR HGEDITOR BROWSER LESSOPEN LESSCLOSE PROMPT_COMMAND GPG_TTY_COMMAND
	AUTOM4TE AUTOCONF AUTOHEADER ACLOCAL AUTOMAKE AUTOPOINT LIBTOOLIZE M4 CRASHPAGER RESTIC_PASSWORD_COMMAND BORG_RSH
	READNULLCMD NULLCMD PSQL_PAGER PSQL_EDITOR MYSQL_PAGER DIFFTOOL MERGETOOL HG_EDITOR`)

// envHidden are variables that change what runs without naming a
// command: the search path, preloaded libraries, files a shell sources
// and prompts it expands, options other programs read.
var envHidden = set2(`LD_PRELOAD LD_AUDIT LD_LIBRARY_PATH SHELLOPTS BASHOPTS SHELL
	PERL5OPT PERL5DB NODE_OPTIONS RUBYOPT PYTHONSTARTUP PYTHONINSPECT GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT
	GIT_CONFIG_GLOBAL GIT_CONFIG_SYSTEM GIT_CONFIG GIT_EXEC_PATH GIT_TEMPLATE_DIR TAR_OPTIONS MAKEFLAGS MFLAGS
	GNUMAKEFLAGS GOFLAGS RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER CARGO_BUILD_RUSTC_WRAPPER
	GROFF_BIN_PATH FACTERLIB EASYRSA_VARS_FILE WGETRC ZIPOPT LESSKEY LESSKEYIN LESSKEY_CONTENT LESSKEYIN_SYSTEM
	BUNDLE_GEMFILE HGRCPATH PSQLRC MYSQL_HISTFILE RESTIC_OPTIONS PAGER_OPTIONS MANOPT APT_CONFIG`)

// envExpanded are variables a shell expands when it reads them: the file
// of BASH_ENV and ENV, the prompts (PS4 with -x).
var envExpanded = set2(`BASH_ENV ENV PS0 PS1 PS2 PS3 PS4`)

var envHiddenPrefixes = []string{"BASH_FUNC_", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_", "DYLD_", "LD_", "CARGO_TARGET_",
	"npm_config_", "NPM_CONFIG_"}

// lessKeyFile reports whether less's options name a key file (-k FILE,
// --lesskey-file, --lesskey-src, --lesskey-content).
func lessKeyFile(options string) bool {
	for o := range strings.FieldsSeq(options) {
		if strings.HasPrefix(o, "--lesskey") || strings.HasPrefix(o, "-") && !strings.HasPrefix(o, "--") && strings.Contains(o, "k") {
			return true
		}
	}
	return false
}

// systemDirs are the directories of a system's own programs.
var systemDirs = set2(`/usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin /usr/local/go/bin /usr/lib/go/bin
	/snap/bin /opt/homebrew/bin /opt/homebrew/sbin`)

// pathOnlyAdds reports whether a value of PATH finds the programs the
// current one does: the system's directories only, or the current PATH
// first ($PATH:DIR adds names, it shadows none).
func pathOnlyAdds(v field) bool {
	t := strings.TrimPrefix(v.text, `"`)
	if strings.HasPrefix(t, "$PATH") || strings.HasPrefix(t, "${PATH}") {
		return true
	}
	if v.dynamic {
		return false
	}
	for dir := range strings.SplitSeq(v.text, ":") {
		if !systemDirs[strings.TrimSuffix(dir, "/")] {
			return false
		}
	}
	return true
}
