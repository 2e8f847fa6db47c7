package shell

import (
	"strings"
	"testing"
)

// A long option is read as getopt_long reads it: an unambiguous prefix is
// the option (rm --rec --for / is rm -rf /), --opt=value the option with
// its value, an ambiguous prefix an error the analyser leaves unresolved,
// and after -- nothing is an option. So it is for every program the
// analyser has a table for. (Issue 29, item 6.2: on f3570ff `rm --rec
// --for /` was rm with two unknown flags, and no deny of rm -rf / saw it.)
func TestAbbreviatedLongOptions(t *testing.T) {
	for _, tt := range []struct{ pattern, src string }{
		{"*rm -rf /", "rm --rec --for /"},
		{"*rm -rf /", "rm --re --fo /"},
		{"*rm -rf /", "rm --recursive --fo /"},
		{"*rm -rf /", "/bin/rm --recu --forc //"},
		{"*rm -rf /", "rm --no-pres --rec --for /"},
		{"*rm -rf /", "rm --rec / --for"},
		{"*rm -rf /", "sudo --us root rm --rec --for /"},
		{"*rm -rf /", "timeout --sig KILL 5 rm --rec --fo /"},
		{"*rm -rf /", "env --ignore-e rm --rec --for /"},
		{"*rm -rf /", "bash -c 'rm --rec --for /'"},
		{"*rm -rf ~", "rm --force ~ --rec"},
		{"*cp -rf *", "cp --for --rec a /"},
		{"*chmod -R *", "chmod --rec 777 /"},
		{"*chown -R *", "chown --rec root /"},
		{"*mv -f *", "mv --fo a /"},
		{"*ln -f *", "ln --for -s a /bin/x"},
		{"*shred --remove=wipe *", "shred --rem=wipe /dev/sda"},
		{"*sudo --user*", "sudo --us root id"},
		{"*tar --to-command*", "tar xf a.tar --to-com=x"},
		// git's subcommands read as git's parse-options does.
		{"*git reset --hard*", "git reset --ha HEAD~1"},
		{"*git reset --hard*", "git -C /repo reset --har"},
		{"*git push --delete*", "git push --del origin x"},
		{"*git push --force-with-lease*", "git push --force-w origin"},
		{"*git clean -f*", "git clean --for -dx"},
		{"*git checkout -f*", "git checkout --for main"},
		{"*git branch --delete*", "git branch --del x"},
	} {
		s := Analyze(tt.src)
		if m := best(mustPattern(t, tt.pattern), s); m != Definite {
			t.Errorf("%q on %q: %v (commands %v, unresolved %q)", tt.pattern, tt.src, m, s.Commands, s.Unresolved)
		}
	}
	// Ambiguous prefixes are errors of the program: unresolved.
	for _, src := range []string{"cp --re a b", "mv --no a b", "env --ign rm -rf /", "sudo --p x id", "chown --no root x",
		"chown --re root /", "git push --forc origin"} {
		if s := Analyze(src); !strings.Contains(strings.Join(s.Unresolved, "; "), "could be more than one") &&
			!strings.Contains(strings.Join(s.Unresolved, "; "), "does not know") {
			t.Errorf("%q: resolved: %v, unresolved %q", src, s.Commands, s.Unresolved)
		}
	}
	// After --, or as the value of an option, a word is no option; a
	// prefix the program does not know stays what it is.
	for _, tt := range []struct{ src, want string }{
		{"rm -- --rec /", "rm --rec /"},
		{"rm --d x", "rm --dir x"},
		{"rm --verb x", "rm --verbose x"},
		{"cp -t --rec a", "cp -t --rec a"},
		{"rm --bogus x", "rm --bogus x"},
		{"grep --rec x .", "grep --rec x ."},
	} {
		if got := Analyze(tt.src).Commands[0].String(); got != tt.want {
			t.Errorf("%q: %q, want %q", tt.src, got, tt.want)
		}
	}
}

// Every table reads each of its long options by its shortest unique
// prefix as that option.
func TestTablesReadPrefixes(t *testing.T) {
	all := map[string]*getopt{}
	for name, g := range tables {
		all[name] = g
	}
	for sub, g := range gitSubcommandTables {
		all["git "+sub] = g
	}
	for name, g := range all {
		if g.exact || g.anyLong {
			continue
		}
		for _, long := range g.longNames {
			want := g.long[long]
			for n := 1; n <= len(long); n++ {
				got, problem := g.lookup(long[:n])
				if problem != "" {
					continue
				}
				if got != want && long[:n] != long {
					// A shorter prefix names another option only when a
					// longer name is that option's own (--no of --no-x).
					if _, own := g.long[long[:n]]; !own {
						t.Errorf("%s: --%s read as --%s, a prefix of --%s", name, long[:n], got.name, long)
					}
				}
				break
			}
		}
	}
}
