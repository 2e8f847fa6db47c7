package shell

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// files are the files a command line writes and those it runs: a script
// it writes and then runs (printf 'rm -rf /' > x; sh x) holds commands the
// analyser did not see, so such a line is unresolved. A file written by
// another call is not the line's to see: the analyser judges the line.
type files struct {
	written map[string]bool
	ran     []string
}

// projectFiles are the files a program reads by itself, without the line
// naming them, whose content runs commands: a project's scripts, its
// build, hooks, a tool's configuration. A line that writes one and runs
// the program runs what it wrote.
var projectFiles = map[string][]string{
	"npm": {"package.json", ".npmrc"}, "npx": {"package.json", ".npmrc"}, "pnpm": {"package.json", ".npmrc"},
	"yarn": {"package.json", ".yarnrc", ".yarnrc.yml"}, "bun": {"package.json", "bunfig.toml"},
	"composer": {"composer.json"}, "bundle": {"Gemfile", "gems.rb"}, "make": {"Makefile", "makefile", "GNUmakefile"},
	"gmake": {"Makefile", "makefile", "GNUmakefile"}, "cmake": {"CMakeLists.txt"},
	"autoconf": {"configure.ac", "configure.in"}, "autoheader": {"configure.ac", "configure.in"},
	"autoreconf": {"configure.ac", "configure.in"}, "autom4te": {"configure.ac", "configure.in"},
	"pip": {"setup.py", "pyproject.toml", "setup.cfg"}, "pip3": {"setup.py", "pyproject.toml", "setup.cfg"},
	"easy_install": {"setup.py"}, "cargo": {"build.rs", "Cargo.toml", "config.toml"}, "less": {".lessfilter", ".lesskey"},
	"top": {"toprc", ".toprc"}, "rtorrent": {".rtorrent.rc", "rtorrent.rc"}, "vagrant": {"Vagrantfile"},
	"rake": {"Rakefile", "rakefile"}, "git": {".gitattributes", ".gitmodules", ".gitconfig"},
}

// gitHook: a file written in a directory named hooks is one git runs, and
// a repository's configuration may run anything.
func gitHook(p string) bool {
	return strings.Contains("/"+p, "/hooks/") || strings.HasSuffix("/"+p, "/.git/config")
}

// wrote notes a file the line writes.
func (s *Script) wrote(f field) {
	if f.dynamic || f.text == "" || f.text == "-" || strings.HasPrefix(f.text, "/dev/") {
		return
	}
	if s.files.written == nil {
		s.files.written = map[string]bool{}
	}
	s.files.written[path.Clean(f.text)] = true
}

// runs notes a file the line runs (a program by its path, a script a
// shell or an interpreter reads, a file source reads).
func (s *Script) runs(f field) {
	if !f.dynamic && f.text != "" {
		s.files.ran = append(s.files.ran, path.Clean(f.text))
	}
}

// redirected notes the files a command's redirections write.
func (s *Script) redirected(redirs []*syntax.Redirect) {
	for _, r := range redirs {
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob, syntax.AppClob, syntax.RdrAllClob, syntax.RdrInOut:
			if r.Word != nil {
				s.wrote(s.unquote(r.Word))
			}
		}
	}
}

// writers notes the files the commands that write them name: tee's
// operands, the last of cp, mv, install and ln, curl -o, wget -O, dd of=.
func (s *Script) writers(name string, args []field) {
	switch name {
	case "tee":
		for _, a := range args {
			if !strings.HasPrefix(a.text, "-") {
				s.wrote(a)
			}
		}
	case "cp", "mv", "install", "ln", "rsync", "scp":
		if len(args) > 0 {
			s.wrote(args[len(args)-1])
		}
	case "curl", "wget":
		for i, a := range args {
			if (a.text == "-o" || a.text == "--output" || a.text == "-O" || a.text == "--output-document") && i+1 < len(args) {
				s.wrote(args[i+1])
			}
			if v, ok := strings.CutPrefix(a.text, "--output="); ok {
				s.wrote(field{text: v})
			}
			if v, ok := strings.CutPrefix(a.text, "--output-document="); ok {
				s.wrote(field{text: v})
			}
		}
	case "dd":
		for _, a := range args {
			if v, ok := strings.CutPrefix(a.text, "of="); ok {
				s.wrote(field{text: v})
			}
		}
	}
}

// runsWhatItWrote is the verdict: unresolved when the line runs a file it
// writes: one it names, one a program it runs reads by itself
// (projectFiles), or one in a directory whose programs or code it runs
// (facter --custom-dir, rustup toolchain link, fail2ban-client -c).
func (s *Script) runsWhatItWrote() {
	if len(s.files.written) == 0 {
		return
	}
	for _, f := range s.files.ran {
		if s.files.written[f] {
			s.unresolved("runs a file the command line itself writes: " + f)
			return
		}
	}
	for _, c := range s.Commands {
		read := projectFiles[c.Name]
		if read == nil {
			continue
		}
		for w := range s.files.written {
			if contains(read, path.Base(w)) || c.Name == "git" && gitHook(w) {
				s.unresolved(c.Name + " runs what a file it reads holds, and the command line itself writes it: " + w)
				return
			}
		}
	}
	for _, d := range s.files.ran {
		for w := range s.files.written {
			if strings.HasPrefix(w, d+"/") {
				s.unresolved("runs the programs or code of a directory the command line itself writes in: " + d)
				return
			}
		}
	}
}
