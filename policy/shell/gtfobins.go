package shell

// GTFOBins (gtfobins.github.io) lists the programs that run a shell or a
// command given to them ("shell" and "command" functions, and those that
// inherit them: vim from vi, man from less). The analyser covers them as
// follows; gtfobins_test.go holds a line per entry and what must come of
// it (a Definite rm -rf / found under the program, code, or unresolved).
//
// The handlers of the programs below are in system.go, network.go,
// devtools.go and documents.go, by what the programs are; the tables of
// the rest in launchers.go and in this file.
//
// A command of their words (wrappers: wrappers.go and below): aa-exec,
// aoss, chroot, chrt, choom, cpulimit, distcc, doas, env, flock, grc,
// ionice, ld.so, logsave, ltrace, msgfilter, multitime, nice, nohup,
// nsenter, openvt, perf, pidstat -e, pkexec, rlwrap, setarch, setlock,
// softlimit, ssh-agent, sshpass, start-stop-daemon, stdbuf, strace, sudo,
// su, sg, taskset, time, timeout, torify, torsocks, unshare, valgrind,
// xargs, xdotool exec, capsh --, ksu -e, ip netns exec, task execute,
// cabal exec, yarn exec, npm exec, uv run, bundle exec, codex sandbox,
// docker/podman run and exec, lxc exec, kubectl exec, mosh HOST CMD,
// rustup run, service ../PATH, gtester, watch, script -c.
//
// A command line given to an option (launchers.go, and the handlers):
// agetty -l, aria2c --on-*, borg --rsh, busctl --address=unixexec:,
// certbot hooks, check_by_ssh -o/-C,
// check_ssl_cert --*-bin, cpio --rsh-command, csvtool call, dhclient -sf,
// dmsetup --exec, dnsmasq --conf-script, enscript -I, fail2ban-client
// action*, find -exec, forge --use, gcc -wrapper, gem open -e, genie -c,
// git (-c, aliases, hooks the line writes), hg --config alias.x=!, latexmk
// -pdflatex=, logrotate -m, man -P/-H, nano -s, openvpn --up, perlbug -e,
// pip --editor, plymouth --command, restic --password-command, rpm
// --pipe, rsync -e, scp -S/-o, scrot -e, socat exec:/system:, split
// --filter, ssh -o ProxyCommand=/LocalCommand=, sshfs -o ssh_command=,
// sshuttle --ssh-cmd, sysctl kernel.core_pattern=|, tar, tcpdump -z, wget
// --use-askpass, xdg-user-dir, yt-dlp --exec, zathura -x, zic -y, zip -TT;
// variables: AUTOM4TE, CRASHPAGER, RESTIC_PASSWORD_COMMAND, LESSOPEN,
// VISUAL, PAGER, READNULLCMD (environ.go).
//
// Code of a language (interpreter_code decides): R, awk (gawk, mawk),
// bpftrace -e, clisp -x, dc -e with !, dotnet fsi, ed, emacs --eval, ex,
// exiftool -if, fzf --bind/--preview, gdb -ex, ghc -e, ghci, gimp -b,
// gnuplot -e, guile -c, irb, jjs, jrunscript -e, jshell, julia, knife exec
// -E, latex and its kin with --shell-escape, lua, m4 with syscmd, mysql
// \!, nmap --interactive, node, octave --eval, perl, php, pic -U (groff,
// nroff), pry, psql \!, puppet apply -e, pwsh, python, rake -e, ranger
// --cmd, rc, ruby, sash, sed e, slsh -e, sqlite3 .shell, sqlmap --eval,
// tclsh, vim -c (vi, view, rvim, vimdiff), dvips -R0, mail --exec, and the
// consoles that take ! from stdin (ftp, lftp, ncftp, psftp, smbclient,
// telnet, tdbtool, ginsh, debugfs, bconsole, asterisk, scanmem, tasksh,
// hping3, jtag, cpan, msfconsole, volatility).
//
// Shells (read as shells): ash, bash, dash, posh, yash, zsh, ksh; of other
// languages (code): csh, tcsh, fish, elvish, pwsh, rc, sash.
//
// Unresolved (the analyser does not follow them): expect, firejail,
// screen, tmux, tmate, pexec, ctr, arch-nspawn, systemd-nspawn, opencode
// and codex (AI agents that run what they choose), run-parts, ansible-test
// shell, cdist shell, systemd-run -S, apt -c/-o of hooks, zypper NAME (a
// zypper-NAME program), hg aliases and hooks, restic -o, wget -e, gcc -B.
//
// Files that run (not ours to read, unless the line wrote them: then
// unresolved): acr, ansible-playbook, apt -c, bpftrace FILE, cobc, cowsay
// -f, dpkg -i, dnf, easyrsa --vars, fastfetch -c, minicom -S, neofetch
// --config, openvpn --config, opkg, pkg, procmail -m, rsyslogd -f,
// runscript, snap, systemctl link/enable, virsh, wg-quick, yum, and the
// project files a program reads by itself (package.json, Makefile,
// CMakeLists.txt, Gemfile, composer.json, configure.ac, setup.py,
// .git/hooks, ~/.lessfilter, toprc, .rtorrent.rc, Vagrantfile): files.go.
//
// Not covered, and why: what is typed into an interactive program on a
// terminal (less, more, pg, man's pager, ncdu, ranger, nano, joe, iftop,
// top, ispell, loginctl, zathura, minicom, vi and the pagers of apport-cli,
// aptitude, aws, cargo, dmesg, gcloud, journalctl, rustc, systemd-resolve,
// timedatectl, zless): keys a human or another program types later are
// no part of a command line; java Shell, go run FILE, dotnet run, make,
// npm run (a program's own files, as python3 script.py); dstat's plugins,
// yum's and facter's plugin directories and wireshark's Lua (files of a
// configuration the line does not name).

// wrappers of GTFOBins, read as the other wrappers (wrappers.go).
var moreWrappers = map[string]*wrapper{
	"aa-exec":   {opts: opts("+p|profile: n|namespace: i|immediate v|verbose d|debug h|help")},
	"aoss":      {opts: opts("+")},
	"choom":     {opts: opts("+n|adjust: p|pid: h|help V|version"), none: []string{"pid"}},
	"cpulimit":  {opts: opts("+l|limit: p|pid: e|exe: P|path: c|cpu: z|lazy i|include-children v|verbose q|quiet k|kill r|restore s|signal: f|foreground m|monitor-forks b|background h|help"), none: []string{"pid", "exe", "path"}},
	"distcc":    {opts: opts("+j show-hosts scan-avail show-principal help version"), none: []string{"j", "show-hosts", "scan-avail", "show-principal"}},
	"logsave":   {opts: opts("+a s v"), operands: 1},
	"multitime": {opts: opts("+c: f: I: i: l n: o: q r: s:"), check: multitimeChecks},
	"setlock":   {opts: opts("+n N x X"), operands: 1},
	"ssh-agent": {opts: opts("+a: c D d E: k O: P: s t:"), none: []string{"k"}},
	"sshpass":   {opts: opts("+f: d: p: e:: P: v h V")},
	"torify":    {opts: opts("+")},
	"grc":       {opts: opts("+e s c: colour: config: pty stdout stderr h|help")},
	"openvt":    {opts: opts("+c|console: f|force l|login u|user s|switch e|exec w|wait v|verbose h|help V|version"), bare: true},
	"msgfilter": {opts: opts("+i|input: D|directory: o|output-file: P|properties-input stringtable-input color:: style: " +
		"newline no-wrap w|width: s|sort-output F|sort-by-file keep-header E|escape no-escape indent force-po h|help V|version")},
	"linux32": {opts: opts("+v|verbose 3|3gb B|32bit F|fdpic-funcptrs I|short-inode L|addr-compat-layout R|addr-no-randomize " +
		"S|whole-seconds T|sticky-timeouts X|read-implies-exec Z|mmap-page-zero uname-2.6 h|help V|version"), bare: true},
}

func init() {
	// Shells of other languages: their scripts are code, also read as sh
	// for deny patterns (code.go).
	interpreters["rc"] = &interpreter{opts: opts("+c: d e i I l n o p s v x V"), code: []string{"c"}, exits: []string{"V"},
		interactive: []string{"i"}, also: true, stdin: true}
	interpreters["sash"] = &interpreter{opts: opts("+c: f: p: q a"), code: []string{"c"}, files: []string{"f"}, also: true, stdin: true}
	for _, name := range []string{"rc", "sash"} {
		handlers[name] = interpreters[name].follow
		tables[name] = interpreters[name].opts
	}
	for name, w := range moreWrappers {
		handlers[name] = w.follow
		tables[name] = w.opts
	}
	for _, name := range []string{"linux64", "i386", "x86_64", "i686", "ppc", "ppc32", "ppc64", "sparc", "sparc32",
		"sparc64", "s390", "s390x", "arm", "aarch64", "uname26", "setarch"} {
		handlers[name] = setarchCommand
	}
	handlers["linux32"] = setarchCommand
	for name, h := range map[string]handler{
		"capsh": capshCommand, "ksu": ksuCommand, "start-stop-daemon": startStopDaemon, "pidstat": pidstatCommand,
		"perf": perfCommand, "ip": ipCommand, "task": taskCommand, "xdotool": xdotoolCommand, "codex": codexCommand,
		"cdist": cdistCommand, "ansible-test": ansibleTestCommand, "ansible": ansibleCommand, "busctl": busctlCommand,
		"socat": socatCommand, "nc": netcatCommand, "ncat": netcatCommand, "netcat": netcatCommand, "sshfs": sshfsCommand,
		"hg": hgCommand, "gcc": gccCommand, "cc": gccCommand, "c89": gccCommand, "c99": gccCommand, "g++": gccCommand,
		"c++": gccCommand, "clang": gccCommand, "clang++": gccCommand, "cmake": cmakeCommand, "dotnet": dotnetCommand,
		"csvtool": csvtoolCommand, "fail2ban-client": fail2banCommand, "xdg-user-dir": xdgUserDirCommand,
		"service": serviceCommand, "sysctl": sysctlCommand, "crontab": crontabCommand, "systemctl": systemctlCommand,
		"run-parts": runPartsCommand, "gtester": gtesterCommand, "rustup": rustupCommand, "mosh": moshCommand,
		"lxc": lxcCommand, "zypper": zypperCommand, "dvips": dvipsCommand, "less": lessCommand, "zless": lessCommand,
		"latexmk": latexmkCommand, "apt": aptCommand, "apt-get": aptCommand, "wget": wgetCommand, "restic": resticCommand, "check_by_ssh": checkBySSHCommand,
		"tex": texCommand, "latex": texCommand, "pdflatex": texCommand, "pdftex": texCommand, "xelatex": texCommand,
		"xetex": texCommand, "lualatex": texCommand, "luatex": texCommand, "etex": texCommand, "context": texCommand,
		"dvilualatex": texCommand, "luahbtex": texCommand, "lualatex-dev": texCommand, "pdflatex-dev": texCommand,
	} {
		handlers[name] = h
	}
	// Programs that run what the analyser does not follow.
	for name, why := range map[string]string{
		"tmux":           "tmux runs commands and types keys into windows",
		"tmate":          "tmate runs commands and types keys into windows",
		"pexec":          "pexec builds the commands it runs from its words",
		"ctr":            "containerd's ctr runs a container's command the analyser does not follow",
		"arch-nspawn":    "arch-nspawn runs what a chroot's configuration says",
		"systemd-nspawn": "systemd-nspawn runs a container the analyser does not follow",
		"machinectl":     "machinectl runs shells and commands in machines the analyser does not follow",
		"opencode":       "opencode is an AI agent, which runs the commands it chooses",
		"aider":          "aider is an AI agent, which runs the commands it chooses",
		"claude":         "claude is an AI agent, which runs the commands it chooses",
		"gemini":         "gemini is an AI agent, which runs the commands it chooses",
	} {
		handlers[name] = unmodelled(why)
	}
}
