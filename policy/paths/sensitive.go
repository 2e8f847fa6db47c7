package paths

import (
	"fmt"
	mathbits "math/bits"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aqlguard/aqlguard/policy/textfold"
	"github.com/gobwas/glob"
)

// Sensitive is a place where secrets are kept, or whose files a program
// runs: reading it, or writing it, is put to a human with Reason.
type Sensitive struct {
	// Pattern matches clean absolute paths: `~/` starts at the home
	// directory, `*` matches within one directory, `**` across
	// directories (`**/.env` is a .env file anywhere), `?`, `[…]` and
	// `{a,b}` as in gobwas/glob; a pattern ending in `/**` also matches
	// the directory itself (listing it shows what is kept there).
	// Matching ignores case and Unicode compatibility forms (see Match).
	Pattern string
	// Reason says, in plain words, what is kept there ("SSH private keys
	// are kept there").
	Reason string
	// Except are patterns, written as Pattern is, of the paths Pattern
	// matches that hold nothing secret (.env.example of .env.*).
	Except []string
	// Project says a project keeps such a file among its own (an
	// application's .env): inside the roots of the server a call goes
	// to, reading or editing it is the project's own work and runs, and
	// the session then holds private data, which the flow judgement
	// follows to any exit (a secret read there is refused on its way
	// out). Outside the roots it asks like any other place. A config's
	// own places are never Project: a team that wants every .env asked
	// about lists "**/.env" in [safety] sensitive_paths.
	Project bool
}

// Shipped is the list aqlguard ships. A config adds to it
// ([safety] sensitive_paths); nothing takes from it.
var Shipped = []Sensitive{
	// The guard's own files: an agent that can change its guard's rules or
	// records is not guarded.
	{Pattern: "~/.config/aqlguard/**", Reason: "aqlguard's own configuration is kept there: an agent must not read or change the rules of its guard"},
	{Pattern: "~/.local/state/aqlguard/**", Reason: "aqlguard's state (approvals, blocks, the audit log) is kept there: an agent must not read or change its guard's records"},
	{Pattern: "/var/lib/aqlguard/**", Reason: "aqlguard's state (approvals, blocks, the audit log) is kept there: an agent must not read or change its guard's records"},
	{Pattern: "/etc/aqlguard/**", Reason: "the managed aqlguard policy is kept there: an agent must not read or change the rules of its guard"},
	{Pattern: "/Library/Application Support/aqlguard/**", Reason: "the managed aqlguard policy is kept there: an agent must not read or change the rules of its guard"},

	// What MCP clients and coding agents run, and the keys they hold.
	{Pattern: "**/claude_desktop_config.json", Reason: "Claude Desktop's MCP configuration is kept there: it says which programs run as MCP servers, with their API keys"},
	{Pattern: "~/.claude.json", Reason: "Claude Code keeps its MCP servers, their API keys and its settings there"},
	{Pattern: "~/.claude/.credentials.json", Reason: "Claude Code keeps its login there"},
	{Pattern: "**/.claude/settings{,.local}.json", Reason: "Claude Code's settings are kept there: they say what it may do without asking and which commands it runs (hooks)"},
	{Pattern: "**/{.mcp.json,.cursor/mcp.json,.vscode/mcp.json,.gemini/settings.json}", Reason: "an MCP configuration is kept there: it says which programs run as MCP servers, with their API keys"},
	{Pattern: "~/.codeium/windsurf/mcp_config.json", Reason: "an MCP configuration is kept there: it says which programs run as MCP servers, with their API keys"},
	{Pattern: "~/.codex/{config.toml,auth.json}", Reason: "Codex keeps its MCP servers and its login there"},

	// SSH, GnuPG and private keys.
	{Pattern: "**/.ssh/**", Reason: "SSH private keys, and the hosts they open, are kept there"},
	{Pattern: "**/{id_rsa,id_dsa,id_ecdsa,id_ed25519,id_ecdsa_sk,id_ed25519_sk}", Reason: "this is the usual name of an SSH private key"},
	{Pattern: "**/*.ppk", Reason: "a .ppk file is a PuTTY private key"},
	{Pattern: "**/.gnupg/**", Reason: "GnuPG's private keys are kept there"},
	{Pattern: "/etc/ssh/ssh_host_*_key", Reason: "this machine's SSH host private key is kept there"},
	{Pattern: "/etc/ssl/private/**", Reason: "this machine's TLS private keys are kept there"},
	// A .pem file is a certificate as often as a key, and its name does
	// not say which: aqlguard does not open it to look, so it asks. A
	// certificate's usual names (.crt, .cer) do not ask.
	{Pattern: "**/*.pem", Reason: "a .pem file may hold a private key (its name cannot tell it from a public certificate)"},
	{Pattern: "**/*.key", Reason: "a .key file usually holds a private key"},
	{Pattern: "**/*.{p12,pfx}", Reason: "a PKCS #12 file holds a private key with its certificate"},
	{Pattern: "**/*.{jks,keystore}", Reason: "a Java keystore holds private keys"},
	{Pattern: "**/*.keytab", Reason: "a Kerberos keytab logs in as a user or service without a password"},

	// Cloud and cluster credentials.
	{Pattern: "**/.aws/**", Reason: "AWS credentials are kept there"},
	{Pattern: "~/.config/gcloud/**", Reason: "Google Cloud credentials are kept there"},
	{Pattern: "**/.azure/**", Reason: "Azure credentials are kept there"},
	{Pattern: "~/.oci/**", Reason: "Oracle Cloud credentials are kept there"},
	{Pattern: "~/.config/doctl/**", Reason: "DigitalOcean credentials are kept there"},
	{Pattern: "**/.kube/config", Reason: "Kubernetes credentials (cluster certificates and tokens) are kept there"},
	{Pattern: "/etc/kubernetes/**", Reason: "this machine's Kubernetes keys and administrator credentials are kept there"},
	{Pattern: "/{run,var/run}/secrets/**", Reason: "secrets given to a container (Docker secrets, Kubernetes service account tokens) are kept there"},
	{Pattern: "**/.docker/config.json", Reason: "Docker keeps registry credentials there"},
	{Pattern: "~/.config/gh/**", Reason: "the GitHub CLI keeps its token there"},
	{Pattern: "~/.config/glab-cli/**", Reason: "the GitLab CLI keeps its token there"},
	{Pattern: "~/.terraform.d/credentials*", Reason: "Terraform keeps its registry tokens there"},
	{Pattern: "~/.terraformrc", Reason: "Terraform's configuration may hold registry tokens"},
	{Pattern: "~/.vault-token", Reason: "HashiCorp Vault keeps its token there"},
	{Pattern: "~/.config/rclone/rclone.conf", Reason: "rclone keeps its cloud storage credentials there"},
	{Pattern: "~/{.s3cfg,.boto}", Reason: "cloud storage credentials are kept there"},

	// Logins of registries, hosts and databases.
	{Pattern: "**/.netrc", Reason: "logins for remote hosts (curl, git, ftp) are kept there"},
	{Pattern: "**/.git-credentials", Reason: "Git's stored passwords and tokens are kept there"},
	{Pattern: "**/.npmrc", Reason: "npm keeps registry tokens there"},
	{Pattern: "**/.pypirc", Reason: "PyPI upload tokens are kept there"},
	{Pattern: "~/.cargo/credentials{,.toml}", Reason: "Cargo keeps the crates.io token there"},
	{Pattern: "~/.gem/credentials", Reason: "RubyGems keeps its API key there"},
	{Pattern: "~/.m2/settings-security.xml", Reason: "Maven keeps its master password there"},
	{Pattern: "~/.gradle/gradle.properties", Reason: "Gradle keeps repository and signing credentials there"},
	{Pattern: "~/{.composer,.config/composer}/auth.json", Reason: "Composer keeps registry tokens there"},
	{Pattern: "**/.pgpass", Reason: "PostgreSQL passwords are kept there"},
	{Pattern: "**/.my.cnf", Reason: "MySQL passwords are kept there"},

	// An application's secrets, which its project keeps (Project): asked
	// about outside the roots only.
	{Pattern: "**/.env", Reason: "a .env file holds an application's secrets (API keys, database passwords)", Project: true},
	{Pattern: "**/.env.*", Reason: "a .env file holds an application's secrets (API keys, database passwords)",
		Except: []string{"**/.env.{example,sample,template,dist,defaults}"}, Project: true},
	{Pattern: "**/.envrc", Reason: "direnv's .envrc sets an application's environment, often with its secrets", Project: true},

	// Password stores, keychains and browser profiles.
	{Pattern: "~/.password-store/**", Reason: "pass keeps its passwords there"},
	{Pattern: "**/*.kdbx", Reason: "a KeePass database holds passwords"},
	{Pattern: "~/Library/Keychains/**", Reason: "macOS keychains (saved passwords and keys) are kept there"},
	{Pattern: "/Library/Keychains/**", Reason: "macOS keychains (saved passwords and keys) are kept there"},
	{Pattern: "~/.local/share/{keyrings,kwalletd}/**", Reason: "the desktop's keyring (saved passwords and keys) is kept there"},
	{Pattern: "~/{.mozilla,snap/firefox,.var/app/org.mozilla.firefox}/**", Reason: "a browser profile is kept there: saved passwords, cookies and open sessions"},
	{Pattern: "~/.config/{google-chrome,chromium,BraveSoftware,microsoft-edge,vivaldi,opera}/**", Reason: "a browser profile is kept there: saved passwords, cookies and open sessions"},
	{Pattern: "~/{snap/chromium,.var/app/com.google.Chrome,.var/app/org.chromium.Chromium,.var/app/com.brave.Browser}/**", Reason: "a browser profile is kept there: saved passwords, cookies and open sessions"},
	{Pattern: "~/Library/Application Support/{Google/Chrome,Chromium,Firefox,BraveSoftware,Microsoft Edge,Vivaldi,Arc}/**", Reason: "a browser profile is kept there: saved passwords, cookies and open sessions"},
	{Pattern: "~/Library/{Safari,Cookies,Containers/com.apple.Safari}/**", Reason: "Safari's cookies, history and saved sessions are kept there"},

	// The system's secrets.
	{Pattern: "/etc/{shadow,gshadow}*", Reason: "the system's password hashes are kept there"},
	{Pattern: "/etc/{master.passwd,spwd.db}", Reason: "the system's password hashes are kept there"},
	{Pattern: "/etc/sudoers{*,.d/**}", Reason: "who may run what as root is set there"},
	{Pattern: "/proc/*/{environ,mem,task/*/environ,task/*/mem}", Reason: "a process's environment or memory is there, with the secrets it was started with"},

	// Histories, and what runs when the user logs in, opens a shell or
	// uses Git: a file written there runs as the user later.
	{Pattern: "~/{.*_history,.history,.zhistory,.local/share/fish/fish_history}", Reason: "shell and tool histories are kept there, often with passwords typed on a command line"},
	{Pattern: "~/{.bashrc,.bash_profile,.bash_login,.bash_logout,.profile,.zshrc,.zprofile,.zshenv,.zlogin,.zlogout,.config/fish/config.fish}", Reason: "the shell runs the commands in this file at every start (and it often sets tokens)"},
	{Pattern: "~/{.config/autostart,.config/systemd/user,Library/LaunchAgents}/**", Reason: "programs set up there start by themselves with the user's session"},
	{Pattern: "**/.git/hooks/**", Reason: "Git runs the programs kept there when it commits, checks out or pushes"},
	{Pattern: "**/.git/config", Reason: "Git runs commands this file names (core.fsmonitor, core.sshCommand), and remote URLs in it may carry credentials"},
	{Pattern: "~/{.gitconfig,.config/git/config}", Reason: "Git runs commands this file names (core.fsmonitor, core.sshCommand, aliases), and it may carry credentials"},
}

// Guard is the list of aqlguard's own files where they are not the
// default ones Shipped names (a configuration file or a state directory
// given on the command line or in the environment): each path, and
// everything under it. Paths that are not absolute and clean are left
// out.
func Guard(files ...string) []Sensitive {
	var out []Sensitive
	for _, f := range files {
		if !strings.HasPrefix(f, "/") || path.Clean(f) != f || unreadable(f) != "" {
			continue
		}
		p := glob.QuoteMeta(f)
		if f != "/" {
			p += "/**"
		}
		out = append(out, Sensitive{Pattern: p, Reason: "aqlguard's own configuration or records are kept there: an agent must not read or change its guard's rules or records"})
	}
	return out
}

// CheckPattern says what is wrong with a sensitive path pattern, or nil.
func CheckPattern(p string) error {
	_, err := compilePattern(p)
	return err
}

// List is a compiled list of sensitive places, safe for concurrent use.
type List struct {
	// src is the list MustCompile was given, compiled at first use
	// (load): compiling the shipped places costs a process about 1.5 ms,
	// which a client's hook would pay at every tool call, most of which
	// name no path.
	src    []Sensitive
	once   sync.Once
	broken string // why src does not compile: every path is in the list

	entries []entry
	// The entries a path may be in, by what their patterns require: a
	// whole segment, or the extension of the last one. A path is tried
	// against those of its segments and extension, and the entries that
	// require nothing to rely on (always), in list order: most paths
	// are in none, and this keeps them from costing every pattern.
	bySegment map[string][]int
	byExt     map[string][]int
	// always has a bit for each entry that needs trying whatever the
	// path, so that Match looks at the entries a path may be in and no
	// other: the serving process comes to the list cold between calls,
	// and a look at each entry's flag brought in every entry (a cache
	// line or two each, ~100 misses a path).
	always []uint64
}

type entry struct {
	Sensitive
	match, except []matcher
}

// matcher is one compiled pattern.
type matcher struct {
	// home: the pattern starts with ~/; forms match the path below the
	// home directory, anywhere the path below any directory (when the
	// home directory is not known: every place the pattern could be).
	home     bool
	forms    []form
	anywhere []form
}

// form is one glob of a pattern, with what makes the common miss cheap:
// a literal every match holds, and for `**/tail` whose tail spans at most
// a few directories, the tail alone, matched against the path's last
// segments (the shipped list is mostly such patterns, and a path deep
// in a project would otherwise cost each of them a backtracking walk).
type form struct {
	src string // the glob, as written in the list after expand
	g   *glob.Pattern
	// lit is a text every match holds ("" when there is none to rely on).
	lit string
	// segs > 0: g is the tail, matched against the path's last 1..segs
	// segments; with under, the middle of **/middle/**, matched against
	// 1..segs segments anywhere that have more after them.
	segs  int
	under bool
	// seg is a segment every match has, whole; else ext, the extension
	// every match's last segment ends with (after its last dot); else
	// neither.
	seg, ext string
}

var compiler = glob.Compiler{Separators: []rune{'/'}, Globstar: true}

// compilePattern compiles a pattern written as Sensitive.Pattern.
func compilePattern(p string) (matcher, error) {
	var m matcher
	switch {
	case strings.HasPrefix(p, "~/"):
		m.home = true
	case strings.HasPrefix(p, "/"), strings.HasPrefix(p, "**/"):
	default:
		return m, fmt.Errorf("%q does not start with /, ~/ or **/ (a pattern matches absolute paths)", p)
	}
	if strings.HasSuffix(p, "/") || path.Clean(p) != p {
		return m, fmt.Errorf("%q is not written as a clean path (write %q): paths are matched clean", p, path.Clean(p))
	}
	if why := unreadable(p); why != "" && !strings.Contains(why, "backslash") {
		return m, fmt.Errorf("%q: %s", p, strings.Replace(why, "the path", "the pattern", 1))
	}
	folded := textfold.Fold(p)
	if m.home {
		folded = strings.TrimPrefix(folded, "~/")
	}
	if _, err := compiler.Compile(folded); err != nil {
		return m, fmt.Errorf("%q: %w", p, err)
	}
	var srcs []string
	for _, alt := range expand(folded) {
		srcs = append(srcs, alt)
		if dir, ok := strings.CutSuffix(alt, "/**"); ok && dir != "" && dir != "**" {
			srcs = append(srcs, dir) // the directory itself
		}
	}
	for _, src := range srcs {
		f, err := compileForm(src)
		if err != nil {
			return m, fmt.Errorf("%q: %w", p, err)
		}
		m.forms = append(m.forms, f)
		if m.home {
			if f, err = compileForm("**/" + src); err != nil {
				return m, fmt.Errorf("%q: %w", p, err)
			}
			m.anywhere = append(m.anywhere, f)
		}
	}
	return m, nil
}

func compileForm(src string) (form, error) {
	// The whole pattern is compiled first: its syntax errors are the
	// ones to report.
	g, err := compiler.Compile(src)
	if err != nil {
		return form{}, err
	}
	f := form{src: src, g: g}
	if strings.ContainsRune(src, '\\') {
		return f, nil // escapes: read as gobwas does, no shortcut
	}
	f.lit = literal(src)
	f.seg, f.ext = keys(src)
	// A tail without ** or classes spans as many segments as it has
	// separators, plus one, at most (alternatives may span fewer); so
	// does the middle of **/middle/**, which is under a directory.
	tail, ok := strings.CutPrefix(src, "**/")
	if !ok || strings.ContainsRune(tail, '[') {
		return f, nil
	}
	middle, under := strings.CutSuffix(tail, "/**")
	if under {
		tail = middle
	}
	if strings.Contains(tail, "**") {
		return f, nil
	}
	if g, err = compiler.Compile(tail); err != nil {
		return form{}, err
	}
	f.g, f.segs, f.under = g, strings.Count(tail, "/")+1, under
	return f, nil
}

// keys are the index keys of a glob without alternatives (form.seg,
// form.ext): its last segment without metacharacters; else the
// extension of its last segment, when that is plain text after a dot.
func keys(src string) (seg, ext string) {
	if strings.ContainsAny(src, "{}\\") {
		return "", ""
	}
	parts := strings.Split(src, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if p := parts[i]; p != "" && !strings.ContainsAny(p, "*?[]") {
			return p, ""
		}
	}
	last := parts[len(parts)-1]
	if i := strings.LastIndexByte(last, '.'); i >= 0 && i+1 < len(last) && !strings.ContainsAny(last[i+1:], "*?[]") {
		return "", last[i+1:]
	}
	return "", ""
}

// maxAlternatives bounds expand: {a,b}{c,d}… doubles with every group.
const maxAlternatives = 64

// expand writes a glob's {…} alternatives out as globs of their own,
// each then with its own literal to test first (gobwas walks
// alternatives by backtracking); a glob with escapes or too many
// alternatives is left whole.
func expand(src string) []string {
	if strings.ContainsRune(src, '\\') {
		return []string{src}
	}
	out := []string{src}
	for {
		var next []string
		grew := false
		for _, s := range out {
			open, close, commas := group(s)
			if open < 0 {
				next = append(next, s)
				continue
			}
			grew = true
			prev := open + 1
			for _, c := range append(commas, close) {
				next = append(next, s[:open]+s[prev:c]+s[close+1:])
				prev = c + 1
			}
		}
		if !grew {
			return out
		}
		if len(next) > maxAlternatives {
			return []string{src}
		}
		out = next
	}
}

// group finds the first top-level {…} of s outside a class: where it
// opens and closes, and its top-level commas; open is -1 when there is
// none.
func group(s string) (open, close int, commas []int) {
	open, depth, class := -1, 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case class:
			class = c != ']'
		case c == '[':
			class = true
		case c == '{':
			if depth == 0 {
				open = i
			}
			depth++
		case c == '}' && depth > 0:
			depth--
			if depth == 0 {
				return open, i, commas
			}
		case c == ',' && depth == 1:
			commas = append(commas, i)
		}
	}
	return -1, -1, nil
}

// literal is the longest run of plain characters of a glob outside its
// alternatives and classes: every match holds it. A run right after
// `**` loses its leading `/`, which globstar lets `**/` match without.
func literal(src string) string {
	best, run := "", ""
	braces, class := 0, false
	flush := func() {
		if len(run) > len(best) {
			best = run
		}
		run = ""
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case class:
			class = c != ']'
		case c == '[':
			flush()
			class = true
		case c == '{':
			flush()
			braces++
		case c == '}':
			braces--
		case braces > 0:
		case c == '*' || c == '?':
			flush()
			if c == '*' && i+1 < len(src) && src[i+1] == '*' && i+2 < len(src) && src[i+2] == '/' {
				i += 2 // **/: the / may be matched by nothing
			}
		default:
			run += string(c)
		}
	}
	flush()
	return best
}

func (f *form) match(s string) bool {
	if f.lit != "" && !strings.Contains(s, f.lit) {
		return false
	}
	if f.segs == 0 {
		return f.g.Match(s)
	}
	if f.under {
		// Every start of a segment, and 1..segs segments from it that
		// have a separator after them.
		for start := 0; start < len(s); {
			end := start
			for range f.segs {
				j := strings.IndexByte(s[end:], '/')
				if j < 0 {
					break
				}
				end += j
				if f.g.Match(s[start:end]) {
					return true
				}
				end++
			}
			j := strings.IndexByte(s[start:], '/')
			if j < 0 {
				break
			}
			start += j + 1
		}
		return false
	}
	end := len(s)
	for range f.segs {
		j := strings.LastIndexByte(s[:end], '/')
		if f.g.Match(s[j+1:]) {
			return true
		}
		if j < 0 {
			break
		}
		end = j
	}
	return false
}

// subject is a path as the patterns see it.
type subject struct {
	folded string
	// rel is the path below the home directory when under is true.
	rel   string
	under bool
	// homeKnown: home patterns match rel; else anywhere.
	homeKnown bool
}

func (m *matcher) matches(s *subject) bool {
	switch {
	case !m.home:
		return anyMatch(m.forms, s.folded)
	case s.homeKnown:
		return s.under && anyMatch(m.forms, s.rel)
	default:
		return anyMatch(m.anywhere, s.folded)
	}
}

func anyMatch(forms []form, s string) bool {
	for i := range forms {
		if forms[i].match(s) {
			return true
		}
	}
	return false
}

// Compile compiles list once, for Match; an invalid pattern is an error
// that names it.
func Compile(list []Sensitive) (*List, error) {
	l := &List{entries: make([]entry, 0, len(list))}
	for _, s := range list {
		e := entry{Sensitive: s}
		m, err := compilePattern(s.Pattern)
		if err != nil {
			return nil, err
		}
		e.match = []matcher{m}
		for _, x := range s.Except {
			m, err := compilePattern(x)
			if err != nil {
				return nil, fmt.Errorf("an exception of %q: %w", s.Pattern, err)
			}
			e.except = append(e.except, m)
		}
		l.entries = append(l.entries, e)
	}
	l.index()
	return l, nil
}

// index fills bySegment and byExt, and marks the entries that need
// trying whatever the path.
func (l *List) index() {
	l.bySegment, l.byExt = map[string][]int{}, map[string][]int{}
	l.always = make([]uint64, (len(l.entries)+63)/64)
	add := func(m map[string][]int, key string, i int) {
		if n := len(m[key]); n == 0 || m[key][n-1] != i {
			m[key] = append(m[key], i)
		}
	}
	for i := range l.entries {
		e := &l.entries[i]
		for _, m := range e.match {
			for _, f := range slices.Concat(m.forms, m.anywhere) {
				switch {
				case f.seg != "":
					add(l.bySegment, f.seg, i)
				case f.ext != "":
					add(l.byExt, f.ext, i)
				default:
					l.always[i/64] |= 1 << (i % 64)
				}
			}
		}
	}
}

// MustCompile is Compile for lists known to be valid (Shipped, and
// patterns the caller has checked with CheckPattern), compiled when
// first matched. Should one not compile after all, the list matches
// every path, with the reason why, as Match does: the caller asks.
func MustCompile(list []Sensitive) *List {
	return &List{src: slices.Clone(list)}
}

// load compiles a list MustCompile made, once.
func (l *List) load() *List {
	l.once.Do(func() {
		if l.src == nil {
			return
		}
		c, err := Compile(l.src)
		if err != nil {
			l.broken = "the list of sensitive places does not compile: " + err.Error()
			return
		}
		l.entries, l.bySegment, l.byExt, l.always = c.entries, c.bySegment, c.byExt, c.always
	})
	return l
}

// shipped is Shipped, compiled at first use.
var shipped = MustCompile(Shipped)

// ShippedList is Shipped, compiled once.
func ShippedList() *List { return shipped }

// Match reports the first place of the list that clean, an absolute
// clean path, is in (one a project keeps, Project, only where no other
// names it), and whether there is one; home is the user's home
// directory ("" when not known: a `~/` pattern then matches below any
// directory, every place it could be).
//
// Matching ignores case and Unicode compatibility forms
// (policy/textfold: ".SSH", "．ssh" and ".ssh" are one), everywhere and
// not only where the file system does (macOS, Windows, case-folding
// mounts on Linux): a place is sensitive however it is spelled, and the
// cost of the rare Linux file that differs from a sensitive one by case
// alone is one question. Within, which decides what runs without asking,
// compares exactly.
//
// A nil List is the Shipped one.
func (l *List) Match(clean, home string) (Sensitive, bool) {
	if l == nil {
		l = shipped
	}
	if l.load().broken != "" {
		return Sensitive{Reason: l.broken}, true
	}
	s := subject{folded: textfold.Fold(clean)}
	if usable(home) {
		s.homeKnown = true
		fh := textfold.Fold(path.Clean(home))
		switch {
		case fh == "/":
			s.rel, s.under = strings.TrimPrefix(s.folded, "/"), true
		case s.folded == fh:
			s.rel, s.under = "", true
		case len(s.folded) > len(fh) && strings.HasPrefix(s.folded, fh) && s.folded[len(fh)] == '/':
			s.rel, s.under = s.folded[len(fh)+1:], true
		}
	}
	// The entries this path may be in, as bits.
	var small [4]uint64
	maybe := small[:]
	if n := (len(l.entries) + 63) / 64; n > len(small) {
		maybe = make([]uint64, n)
	}
	mark := func(is []int) {
		for _, i := range is {
			maybe[i/64] |= 1 << (i % 64)
		}
	}
	var last string
	for rest := s.folded; ; {
		seg, after, more := strings.Cut(rest, "/")
		mark(l.bySegment[seg])
		if !more {
			last = seg
			break
		}
		rest = after
	}
	if i := strings.LastIndexByte(last, '.'); i >= 0 {
		mark(l.byExt[last[i+1:]])
	}
	// A place a project keeps (Project) counts only where no other
	// entry names the path: a .env under ~/.aws is AWS's.
	var project Sensitive
	found := false
	for w, bits := range maybe {
		if w < len(l.always) {
			bits |= l.always[w]
		}
		for ; bits != 0; bits &= bits - 1 {
			i := w*64 + mathbits.TrailingZeros64(bits)
			e := &l.entries[i]
			if !e.match[0].matches(&s) {
				continue
			}
			excepted := false
			for j := range e.except {
				if e.except[j].matches(&s) {
					excepted = true
					break
				}
			}
			if excepted {
				continue
			}
			if !e.Project {
				return e.Sensitive, true
			}
			if !found {
				project, found = e.Sensitive, true
			}
		}
	}
	return project, found
}

// Len is the number of places the list names.
func (l *List) Len() int {
	if l == nil {
		l = shipped
	}
	return len(l.load().entries)
}

// lastCompiled caches the list Match compiled last.
var lastCompiled atomic.Pointer[compiledList]

type compiledList struct {
	first *Sensitive
	n     int
	list  *List
	err   error
}

// Match is List.Match over list: Shipped is compiled once, and so is
// the list last given (a list is read as immutable); a caller that holds
// a list of its own compiles it with Compile. A list that does not
// compile matches every path, with the reason why: the caller asks.
func Match(list []Sensitive, clean, home string) (Sensitive, bool) {
	if len(list) == 0 {
		return Sensitive{}, false
	}
	var l *List
	switch c := lastCompiled.Load(); {
	case &list[0] == &Shipped[0] && len(list) == len(Shipped):
		l = shipped
	case c != nil && c.first == &list[0] && c.n == len(list):
		if c.err != nil {
			return Sensitive{Reason: "the list of sensitive places does not compile: " + c.err.Error()}, true
		}
		l = c.list
	default:
		compiled, err := Compile(list)
		lastCompiled.Store(&compiledList{first: &list[0], n: len(list), list: compiled, err: err})
		if err != nil {
			return Sensitive{Reason: "the list of sensitive places does not compile: " + err.Error()}, true
		}
		l = compiled
	}
	return l.Match(clean, home)
}
