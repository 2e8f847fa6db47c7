package injection

import "fmt"

// Kind is what a finding found.
type Kind uint8

const (
	// Instruction is text that instructs the assistant beyond the use of
	// the tool it describes: to ignore its instructions, to hide
	// something from the user, to change what other tools do, to obey
	// instructions found elsewhere.
	Instruction Kind = iota + 1
	// Tag is markup that dresses text up as the model's own prompt:
	// <IMPORTANT>, <system>, [INST], <|im_start|>, an HTML comment.
	Tag
	// OtherTool is a mention of a tool of another server.
	OtherTool
	// SecretFile is a place where secrets are kept (~/.ssh, id_rsa,
	// .env, ~/.aws/credentials, /etc/shadow, mcp.json, …), or a request
	// to read one.
	SecretFile
	// SendData is a request to send data somewhere: to an address or a
	// URL written in the text, into a URL's placeholders, or the
	// conversation itself into an argument.
	SendData
	// Invisible is text a reader cannot see: Unicode tag characters,
	// variation selectors used as data, bidirectional controls,
	// zero-width characters inside words, terminal control codes, and
	// padding that pushes text out of view.
	Invisible
	// Confusable is a word that mixes look-alike letters of another
	// script into Latin (a Cyrillic "о" in "ignоre").
	Confusable
	// Oversize is a text longer than a description needs.
	Oversize
	// Unscanned is text past the scan's budget, which was not read.
	Unscanned
)

var kindNames = [...]string{
	Instruction: "instruction",
	Tag:         "tag",
	OtherTool:   "other-tool",
	SecretFile:  "secret-file",
	SendData:    "send-data",
	Invisible:   "invisible",
	Confusable:  "confusable",
	Oversize:    "oversize",
	Unscanned:   "unscanned",
}

// String is the kind's name as the audit and the review show it.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Confidence says how sure a finding is that the text is an attack.
type Confidence uint8

const (
	// Low: worth showing to the human who reviews the tool; honest
	// servers write it too ("you must call X first", "IMPORTANT: paths
	// must be absolute").
	Low Confidence = iota + 1
	// High: honest text does not do this. A tool with a High finding is
	// held back until a human approves it.
	High
)

// String is "low" or "high".
func (c Confidence) String() string {
	switch c {
	case Low:
		return "low"
	case High:
		return "high"
	}
	return fmt.Sprintf("confidence(%d)", uint8(c))
}

// Finding is one thing the scanner found in a text.
type Finding struct {
	Kind       Kind
	Confidence Confidence
	// Rule names the rule that found it, stable across releases, for the
	// audit ("override", "secrecy", "tag-important", "unicode-tags", …).
	Rule string
	// Where is where in a definition or result the text was
	// ("description", "inputSchema.properties.path.description"); empty
	// for a text scanned on its own.
	Where string
	// Excerpt is the text around what was found, at most MaxExcerpt
	// bytes, with white space folded to single spaces and every
	// character a reader cannot see written as \u{…}.
	Excerpt string
	// Say is what was found in plain words ("tells the assistant to read
	// ~/.ssh/id_rsa"), safe to show as the Excerpt is.
	Say string
	// Count is how many times the rule matched in this text (at least
	// 1); only the first is described.
	Count int
}

// String is the finding on one line, for logs and tests.
func (f Finding) String() string {
	where := f.Where
	if where == "" {
		where = "text"
	}
	s := fmt.Sprintf("%s %s/%s at %s: %s", f.Confidence, f.Kind, f.Rule, where, f.Say)
	if f.Count > 1 {
		s += fmt.Sprintf(" (%d times)", f.Count)
	}
	return s
}

// Options shape a scan.
type Options struct {
	// OtherTools are the names of the tools of the client's other
	// servers (as the servers name them, and as the client sees them if
	// that differs). A text that mentions one is reaching beyond its own
	// server. A tool mentioning its own server's tools is normal.
	OtherTools []string
	// OwnTools are the names of the scanned server's own tools; a name
	// both in OwnTools and in OtherTools is not reported.
	OwnTools []string
	// Data says the text is data a server returned (a tool result, a
	// resource, a prompt), not a definition. Data mentions paths,
	// addresses and tags for honest reasons, so those count only when an
	// instruction comes with them, and length is no finding.
	Data bool
	// Budget is the most bytes one Scan, ScanTool or Batch reads
	// (0: DefaultBudget). What lies past it is reported as an Unscanned
	// finding, never skipped silently.
	Budget int
	// MaxText is the longest a definition's text may be before it is an
	// Oversize finding (0: DefaultMaxText). Ignored for Data.
	MaxText int
}

const (
	// DefaultBudget is the bytes one scan reads when Options.Budget is 0.
	DefaultBudget = 1 << 20
	// DefaultMaxText is the longest a definition's text may be when
	// Options.MaxText is 0: the longest honest description of the
	// servers measured is under 3 KiB.
	DefaultMaxText = 4 << 10
	// MaxExcerpt bounds a finding's Excerpt, in bytes.
	MaxExcerpt = 120
)
