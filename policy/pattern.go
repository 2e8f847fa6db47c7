package policy

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aqlguard/aqlguard/policy/shell"
	"github.com/aqlguard/aqlguard/policy/textfold"
	"github.com/gobwas/glob"
)

// MaxPatternLength bounds a pattern's source. Real policy globs are a few
// dozen bytes; the bound keeps a pasted blob from turning every evaluation
// into a long backtracking walk.
const MaxPatternLength = 1024

// Kind says which subjects of a call a pattern list entry is matched
// against. It follows from the pattern's shape (see the package
// documentation), so a reader of the policy can tell it at a glance.
type Kind uint8

const (
	// Names: the operation name, the bare tool name in snake_case and in
	// the server's spelling, and server.tool.
	Names Kind = 1 << iota
	// Text: every decoded argument value (and key) of a proxied call, and
	// the hint of a reported step.
	Text
)

// String names the kinds, for messages and policy explain.
func (k Kind) String() string {
	switch k {
	case Names:
		return "name"
	case Text:
		return "text"
	case Names | Text:
		return "name and text"
	}
	return "none"
}

// Pattern is a compiled glob. The zero Pattern matches nothing.
type Pattern struct {
	// Source is the pattern as written in the configuration.
	Source string
	// Kind is what the pattern is matched against in a pattern list.
	Kind   Kind
	norm   string
	quoted string // Source quoted, for messages
	g      *glob.Pattern
	// cmd is the pattern read as a command line, for arguments that carry
	// shell commands (nil when it is not shaped like one).
	cmd *shell.Pattern
	// reading is which of a call's names a name pattern speaks of; tail
	// is what follows "*." in a pattern read as readAnyServer.
	reading reading
	tail    *glob.Pattern
	// layer is the configuration layer the pattern comes from.
	layer Layer
}

// Layer is the configuration layer the pattern comes from: the managed
// policy file or the user's own.
func (p Pattern) Layer() Layer { return p.layer }

// reading is which of a call's names (CallNames) a name pattern is matched
// against: what its literal head says it is about.
type reading uint8

const (
	// readAll: every name ("*write*", "echo", "fs*").
	readAll reading = iota
	// readQualified: server.tool names only; the head names the server
	// ("fs.*", "fs.write_file", "fs.resource:file:///etc/*").
	readQualified
	// readAnyServer: server.tool names of any server, the part after
	// "*." matched against the tool's own name alone ("*.write_*").
	readAnyServer
	// readOwn: the tool's own name only; the head is a word of the
	// naming vocabulary ("get_*", "delete_*", "read_file").
	readOwn
	// readOperation: the operation names of one server; the head is a
	// configured server's name ("fs_*", "fs_write_file"). Compile
	// decides it, knowing the servers (Pattern.forServers).
	readOperation
)

// kinds are the name forms a reading matches (readAnyServer aside).
func (r reading) kinds() formKind {
	switch r {
	case readQualified:
		return formQualified
	case readOwn:
		return formOwn
	case readOperation:
		return formOperation
	}
	return formOperation | formOwn | formQualified
}

// String names the reading, for policy check and the docs' examples.
func (r reading) String() string {
	switch r {
	case readQualified:
		return "server.tool names of that server"
	case readAnyServer:
		return "server.tool names of any server, by the tool's own name"
	case readOwn:
		return "the tool's own name"
	case readOperation:
		return "that server's operation names"
	}
	return "every name"
}

// ServerNameLength bounds a server's name (validate.go): a word of
// letters and digits, starting with a letter.
const ServerNameLength = 32

// headWord is the server-shaped word a folded pattern starts with
// ([a-z][a-z0-9]*, at most ServerNameLength) and the byte after it (0 at
// the end, or when the word is too long to be a server's name).
func headWord(norm string) (word string, next byte) {
	i := 0
	for i < len(norm) && (norm[i] >= 'a' && norm[i] <= 'z' || i > 0 && norm[i] >= '0' && norm[i] <= '9') {
		i++
	}
	if i == 0 || i > ServerNameLength || i == len(norm) {
		return "", 0
	}
	return norm[:i], norm[i]
}

// readingOf is what a folded name pattern's shape alone says it is
// about: "fs.*" a server's server.tool names, "*.x" any server's, "get_*"
// (a word of the naming vocabulary, then '_') the tool's own name.
// Everything else reads every name, until Compile, which knows the
// servers, reads "fs_*" as server fs's operations (forServers).
func readingOf(norm string) (reading, string) {
	if rest, ok := strings.CutPrefix(norm, "*."); ok && rest != "" {
		return readAnyServer, rest
	}
	switch word, next := headWord(norm); {
	case next == '.':
		return readQualified, ""
	case next == '_' && ConventionWord(word):
		return readOwn, ""
	}
	return readAll, ""
}

// forServers completes the pattern's reading for the configured servers:
// a pattern that starts with a server's name and '_' ("fs_*") is about
// that server's operation names (fs_write_file), never a tool of another
// server whose own name starts with "fs_". A server named like a verb
// ("search") does not change what "search_*" means: the tool's own name
// (policy check reports the server's name).
func (p *Pattern) forServers(servers map[string]bool) {
	if p.reading != readAll || p.Kind&Names == 0 {
		return
	}
	if word, next := headWord(p.norm); next == '_' && servers[word] {
		p.reading = readOperation
	}
}

// Reading says, in words, which names of a call a name pattern is
// matched against.
func (p Pattern) Reading() string { return p.reading.String() }

// Quoted is Source as a quoted string, for messages.
func (p Pattern) Quoted() string {
	if p.quoted == "" {
		return strconv.Quote(p.Source) // a Pattern CompilePattern did not make
	}
	return p.quoted
}

// Command is the pattern read as a shell command line, or nil.
func (p Pattern) Command() *shell.Pattern { return p.cmd }

// CompilePattern compiles a policy glob. See the package documentation for
// the syntax, the folding applied to both sides of a match, and how the
// pattern's shape decides its Kind.
func CompilePattern(src string) (Pattern, error) {
	if !utf8.ValidString(src) {
		return Pattern{}, errors.New("pattern is not valid UTF-8")
	}
	if len(src) > MaxPatternLength {
		return Pattern{}, fmt.Errorf("pattern is %d bytes long; the limit is %d", len(src), MaxPatternLength)
	}
	norm := Normalize(src)
	if norm == "" {
		return Pattern{}, errors.New("pattern is empty")
	}
	if n, ok := CanonicalNumber(norm); ok {
		norm = n // "1e2" is written for the same values as "100"
	}
	// No separators: policy subjects are operation names, dotted
	// server.tool names, argument values and hints, none of which has a
	// path structure that `*` should stop at.
	g, err := glob.Compile(norm)
	if err != nil {
		var se *glob.SyntaxError
		if errors.As(err, &se) {
			if norm == src {
				return Pattern{}, fmt.Errorf("invalid glob: %s (at byte %d)", se.Reason, se.Offset)
			}
			return Pattern{}, fmt.Errorf("invalid glob: %s", se.Reason)
		}
		return Pattern{}, fmt.Errorf("invalid glob: %v", err)
	}
	pat := Pattern{Source: src, Kind: kindOf(norm), norm: norm, quoted: strconv.Quote(src), g: g}
	if pat.Kind&Names != 0 {
		var tail string
		if pat.reading, tail = readingOf(norm); pat.reading == readAnyServer {
			if pat.tail, err = glob.Compile(tail); err != nil {
				pat.reading = readAll // cannot happen: a tail of a glob that compiled
			}
		}
	}
	if pat.Kind&Text != 0 {
		if cmd, ok, err := shell.CompilePattern(src); err == nil && ok {
			pat.cmd = cmd
		}
	}
	return pat, nil
}

// kindOf classifies a folded pattern. A name pattern is made of what
// names are made of (letters, digits, '_', '.', '-') and glob syntax, with
// no white space, and does not start with '-' (no name does; flags like
// "--force" do). A name pattern that is open at both ends ("*force*") looks
// for a word anywhere, so it is matched against text too. Everything else
// is text.
func kindOf(norm string) Kind {
	if readSubjectPattern(norm) {
		return Names
	}
	first := true
	for i := 0; i < len(norm); i++ {
		c := norm[i]
		switch {
		case c == '\\' && i+1 < len(norm):
			i++
			c = norm[i]
		case strings.IndexByte("*?[]{},!^", c) >= 0:
			continue
		}
		name := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' || c >= utf8.RuneSelf
		if !name || first && c == '-' {
			return Text
		}
		first = false
	}
	if len(norm) > 2 && norm[0] == '*' && strings.HasSuffix(norm, "*") && !strings.HasSuffix(norm, `\*`) {
		return Names | Text
	}
	return Names
}

// Match reports whether subject matches the whole pattern, after both are
// folded.
func (p Pattern) Match(subject string) bool {
	if p.g == nil {
		return false
	}
	return p.g.Match(Normalize(subject))
}

// MatchNormalized is Match for a subject that has already been through
// Normalize. Evaluators that try many patterns against the same few subjects
// fold once and call this, which does not allocate.
func (p Pattern) MatchNormalized(normalized string) bool {
	if p.g == nil {
		return false
	}
	return p.g.Match(normalized)
}

// FirstName is the position in n.Forms of the first name the pattern
// matches, as it reads (its literal head says which names it speaks
// of), or -1. Only a name pattern matches a name.
func (p Pattern) FirstName(n CallNames) int {
	if p.g == nil || p.Kind&Names == 0 {
		return -1
	}
	if p.reading == readAnyServer {
		for i, f := range n.Forms {
			if n.kinds[i]&formOwn != 0 && n.qualified[i] >= 0 && p.tail.Match(f) {
				return int(n.qualified[i])
			}
		}
		return -1
	}
	want := p.reading.kinds()
	for i, f := range n.Forms {
		if n.kinds[i]&want != 0 && p.g.Match(f) {
			return i
		}
	}
	return -1
}

// MatchesName reports whether the pattern matches one of a call's names
// (FirstName).
func (p Pattern) MatchesName(n CallNames) bool { return p.FirstName(n) >= 0 }

// Normalized is the form the glob was compiled from.
func (p Pattern) Normalized() string { return p.norm }

// String returns the source text, so a Pattern prints as it was configured.
func (p Pattern) String() string { return p.Source }

// Normalize folds s for matching (textfold.Fold): NFKC, lower case, every
// run of white space and control characters one ASCII space, format
// characters removed, both ends trimmed. Patterns and subjects go through
// the same function, so `*drop table*` also catches "DROP\t\tTABLE".
func Normalize(s string) string { return textfold.Fold(s) }

// maxNumberExponent bounds the exponents CanonicalNumber expands exactly:
// "1e999999999" must not become a billion digits.
const maxNumberExponent = 400

// maxNumberLength bounds the numbers rendered exactly, for the same reason.
const maxNumberLength = 512

// CanonicalNumber renders a JSON number in one form, so that a rule
// written for 100 also sees 1e2, 100.0 and 1E+2: integers without
// exponent or fraction, other values as the shortest exact decimal, "-0"
// as "0". ok is false when s is not a JSON number. Numbers with huge
// exponents keep their float64 rendering (still one form per value).
func CanonicalNumber(s string) (string, bool) {
	// A JSON integer short enough to be rendered exactly is its own
	// canonical form (but for -0): most numbers in arguments are, and
	// big.Rat costs half a microsecond.
	if len(s) <= maxNumberExponent && isPlainInteger(s) {
		if s == "-0" {
			return "0", true
		}
		return s, true
	}
	return exactNumber(s)
}

// isPlainInteger reports whether s is a JSON number without fraction or
// exponent.
func isPlainInteger(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || digits[0] == '0' && len(digits) > 1 {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// exactNumber is CanonicalNumber by way of an exact rational.
func exactNumber(s string) (string, bool) {
	if !isJSONNumber(s) {
		return "", false
	}
	if exp := exponentOf(s); exp > maxNumberExponent || exp < -maxNumberExponent || len(s) > maxNumberLength {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return "", false
		}
		return strconv.FormatFloat(f, 'g', -1, 64), true
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return "", false
	}
	if r.IsInt() {
		return r.Num().String(), true
	}
	// A JSON decimal is a fraction over a power of ten, so its exact
	// expansion ends after at most (fraction digits - exponent) digits.
	out := r.FloatString(fractionDigits(s))
	out = strings.TrimRight(out, "0")
	return strings.TrimSuffix(out, "."), true
}

// fractionDigits is how many digits after the point the exact decimal
// expansion of the JSON number s can need.
func fractionDigits(s string) int {
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	_, frac, _ := strings.Cut(mant, ".")
	e, _ := strconv.Atoi(exp) // bounded by maxNumberExponent by now
	return max(0, len(frac)-e)
}

// isJSONNumber checks the JSON number grammar (RFC 8259), which is
// stricter than strconv's: no "+1", ".5", "1.", "0x1f", "Inf" or "1_000".
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

// exponentOf estimates the decimal exponent of a JSON number (the digits
// before the point plus the written exponent), saturating.
func exponentOf(s string) int {
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	n := 0
	if exp != "" {
		v, err := strconv.Atoi(exp)
		if err != nil { // too many digits for an int: surely huge
			if strings.HasPrefix(exp, "-") {
				return -maxNumberExponent - 1
			}
			return maxNumberExponent + 1
		}
		n = v
	}
	intPart, _, _ := strings.Cut(strings.TrimPrefix(mant, "-"), ".")
	return n + len(intPart)
}

// readSubjectPattern reports whether a folded pattern names resources or
// prompts ("*.resource:file:///etc/*", "fs.prompt:deploy*"): a name
// pattern (or nothing) before "resource:" or "prompt:", then the URI or
// name, which may hold what names do not (':', '/'), but no space.
func readSubjectPattern(norm string) bool {
	for _, marker := range []string{ResourcePrefix, PromptPrefix} {
		i := strings.Index(norm, marker)
		if i < 0 {
			continue
		}
		head := norm[:i]
		if head != "" && !strings.HasSuffix(head, ".") && !strings.HasSuffix(head, "*") {
			continue
		}
		if strings.ContainsRune(norm[i:], ' ') {
			continue
		}
		if head == "" || kindOf(strings.TrimSuffix(head, "."))&Names != 0 || head == "*" {
			return true
		}
	}
	return false
}
