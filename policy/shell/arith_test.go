package shell

import "testing"

// Bash evaluates the array subscript of a name that printf -v, read,
// [[ -v ]], test -v, declare and a nameref take, running the $(…) in it:
// such a name, static or not, leaves the line unresolved unless its
// subscript is digits; declare of a word that is not static (or holds $
// or `) is read as an assignment again. (Issue 29, item 6.1: on f3570ff
// every one of these resolved statically, without the rm.)
func TestNamesBashEvaluates(t *testing.T) {
	for _, src := range []string{
		`printf -v 'a[$(rm -rf /)]' 1`, `read 'a[$(rm -rf /)]' <<< 1`, `read -r -p x 'a[$(rm -rf /)]'`,
		`declare 'a[$(rm -rf /)]=1'`, `x='a[$(rm -rf /)]'; [[ -v $x ]]`, `x='a[$(rm -rf /)]'; [ -v "$x" ]`,
		`x='a[$(rm -rf /)]'; test -v "$x"`, `x='a[$(rm -rf /)]'; declare -n r="$x"; r=1`, `local -n r="$1"`,
		`x='a[$(rm -rf /)]'; printf -v "$x" 1`, `x='a[$(rm -rf /)]'; read "$x" <<< 1`,
		`x='a=($(rm -rf /))'; declare -a "$x"`, `declare -a 'a=($(rm -rf /))'`, `typeset "$x"`, "declare -A 'm=([`id`]=1)'",
		`nameref r='a[$(id)]'`, `[[ -v 'a[$(id)]' ]]`,
	} {
		if s := Analyze(src); len(s.Unresolved) == 0 {
			t.Errorf("%q: resolved: commands %v", src, s.Commands)
		}
	}
	for _, src := range []string{
		"read -r line < f", "while read -r a b; do echo $a; done < f", "printf -v out '%s' x", `printf '%s\n' "$x"`,
		"declare -A m=([k]=v)", "export PATH=$PATH:/x", "declare -p x", "local x=1", "[[ -v HOME ]]", "test -v a[0]",
		"declare -n ref=arr", "read -a parts <<< 'a b'", "[ -n \"$x\" ]",
	} {
		if s := Analyze(src); len(s.Unresolved) > 0 {
			t.Errorf("%q: unresolved %q", src, s.Unresolved)
		}
	}
}
