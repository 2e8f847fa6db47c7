package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// What a dialog says, and in which order. A person who has never read a
// policy must be able to decide from the first lines: who wants to do
// what, with which server, and why they are asked, in words; the tier
// and rule below for those who know them; then the arguments, the part
// that runs (a command, the commands in it, a path) first, strings as
// their text with real line breaks, and an exact count of anything left
// out.

// Limits of what a dialog renders. The scrolling view (zenity) shows
// strings in full up to scrollChars each; the dialogs of macOS and
// Windows do not scroll, so there each is cut to cappedChars and
// cappedLines, and the arguments to maxArgLines lines in all.
const (
	scrollChars  = 20000 // characters of one string shown in a scrolling view
	cappedChars  = 600   // … in a dialog that does not scroll
	cappedLines  = 8     // lines of one string in a dialog that does not scroll
	maxArgLines  = 40    // lines of arguments in a dialog that does not scroll
	maxLineChars = 90    // longer lines are broken (what fits the dialog's width)
	maxFieldChar = 1000  // characters of one single-line field (agent, rule, …)
	maxCommands  = 12    // commands listed under "Runs"
)

// questionText renders a confirmation question. With capped (the macOS
// and Windows dialogs, which do not scroll) long arguments are cut, with
// an exact count of what is left out. now is only used for the "in
// 4m59s" hint.
func questionText(r Request, now time.Time, capped bool) (string, error) {
	var sections []string
	who := clientName(r.Client)
	switch r.Operation {
	case "check-in: step limit":
		sections = append(sections, who+" has made as many calls as it may without a person looking in.")
	case "check-in: reported failure":
		sections = append(sections, who+" reported that its last step failed; it is paused until you look.")
	case OperationToolChange:
		sections = append(sections, wrapWords(fmt.Sprintf("The %s server changed its tool %s since you approved it. "+
			"Until you approve the change, the agent sees the tool as it was, and calls to it are refused.",
			visible(r.Server, false), visible(r.Tool, false)), ""))
	case OperationToolReview:
		sections = append(sections, wrapWords(fmt.Sprintf("The %s server is new to aqlguard. Look at what its tools can do "+
			"before the agent uses them: until you approve, calls to them wait.",
			visible(r.Server, false)), ""))
	default:
		sections = append(sections, wrapWords(summary(r), ""))
	}
	if s := reasons(r, "Why you are asked"); s != "" {
		sections = append(sections, s)
	}
	switch {
	case r.Detail != "":
		detail := strings.TrimSuffix(visible(r.Detail, true), "\n")
		if capped {
			if cut, more := capRunes(detail, maxArgLines*maxLineChars); more > 0 {
				detail = cut + fmt.Sprintf("\n… %d more characters not shown (aqlguard pins list shows them all)", more)
			}
		}
		head := "Change (- as approved, + as the server sends it now):\n"
		if r.Operation == OperationToolReview {
			head = "Its tools, and what each can do (aqlguard's reading of the server's words):\n"
		}
		sections = append(sections, head+detail)
	case r.Server != "" && len(r.Arguments) == 0:
		sections = append(sections, "Arguments: none")
	case len(r.Arguments) > 0:
		args, err := renderArguments(r.Arguments, r.Roles, r.Commands, capped)
		if err != nil {
			// Fail closed: a human must not approve what they cannot see.
			return "", fmt.Errorf("rendering the arguments: %w", err)
		}
		sections = append(sections, strings.TrimSuffix(args, "\n"))
	case r.Action != "":
		var b strings.Builder
		field(&b, "Its next call", nextCall(r))
		sections = append(sections, strings.TrimSuffix(b.String(), "\n"))
	}
	sections = append(sections, wrapWords(identity(r), "    ")+"\n"+"This question expires "+expiry(r.ExpiresAt, now)+".")
	var buttons []string
	switch r.Operation {
	case "check-in: step limit":
		if r.Steps > 0 {
			buttons = append(buttons, fmt.Sprintf("%q lets the agent make another %d calls before it asks again; each call is still judged by the policy.", allowOnceLabel, r.Steps))
		} else {
			buttons = append(buttons, fmt.Sprintf("%q lets the agent go on until it reaches the step limit again.", allowOnceLabel))
		}
	case "check-in: reported failure":
		buttons = append(buttons, fmt.Sprintf("%q lifts the pause: the agent may go on after its failed step.", allowOnceLabel))
	case OperationToolChange:
		buttons = append(buttons, fmt.Sprintf("%q approves the changed tool: the agent sees it as it is now and may call it.", allowOnceLabel))
	case OperationToolReview:
		buttons = append(buttons, fmt.Sprintf("%q approves these tools as they are: the agent may call them, each call still judged "+
			"by the policy; a later change asks again.", allowOnceLabel))
	default:
		buttons = append(buttons, fmt.Sprintf("%q lets this one call run.", allowOnceLabel))
		if r.AllowSession {
			tool := r.Tool
			if tool == "" {
				tool = "this tool"
			}
			buttons = append(buttons, fmt.Sprintf("%q also lets later calls of %s run without asking while this chat lasts "+
				"(calls judged on their arguments still ask).", AllowSessionLabel, visible(tool, false)))
		}
		if r.Forget {
			buttons = append(buttons, fmt.Sprintf("%q also clears what this chat has read: until it reads private data and "+
				"untrusted content again, sending data out does not ask.", ForgetLabel))
		}
	}
	buttons = append(buttons, fmt.Sprintf("%q (highlighted; also Return or Escape) refuses it, as does closing the window.", denyLabel))
	for i, l := range buttons {
		buttons[i] = wrapWords(l, "")
	}
	sections = append(sections, strings.Join(buttons, "\n"))
	return strings.Join(sections, "\n\n"), nil
}

// reasons is the "why" and "decided by" lines ("" when there are none).
func reasons(r Request, why string) string {
	var b strings.Builder
	if w := plainWhy(r); w != "" {
		field(&b, why, w)
	}
	if d := decidedBy(r); d != "" && d != r.Reason {
		field(&b, "Decided by", d)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// nextCall is a check-in's next call, without the guard's "check-in:
// ... (next action: ...)" wrapping.
func nextCall(r Request) string {
	s := r.Action
	if inner, ok := strings.CutPrefix(s, r.Operation+" (next action: "); ok && strings.HasSuffix(inner, ")") {
		return strings.TrimSuffix(inner, ")")
	}
	return s
}

// codeText renders the text of the verification code dialog: who was
// stopped and why, the code near the top, on a line of its own (a
// triple click selects exactly it, and nobody has to scroll to it),
// what to do with it and where to type it (the tool the model actually
// has), then the call. With an empty code it is the label above an
// entry field that holds the code (see showCode on macOS and Windows):
// then the code's place is the end.
func codeText(r Request, now time.Time, code string) string {
	var sections []string
	who := clientName(r.Client)
	agent := visible(r.Agent, false)
	stopped := "stopped"
	if r.Tier == "verify" {
		stopped = "paused"
	}
	line := fmt.Sprintf("aqlguard %s %s (agent %q): nothing it asks for runs until you decide.", stopped, who, agent)
	if r.Server != "" {
		line = fmt.Sprintf("aqlguard %s %s (agent %q) when it tried to %s Nothing it asks for runs until you decide.",
			stopped, who, agent, what(r))
	}
	sections = append(sections, wrapWords(line, ""))
	if code != "" {
		sections = append(sections, "Verification code:\n\n"+code)
	}
	tool := r.VerifyTool
	if tool == "" {
		tool = "verify_challenge"
	}
	chat := "your chat with the assistant"
	if r.Client != "" {
		chat = "your chat in " + who
	}
	sections = append(sections, wrapWords("To let it go on: type or paste the code into "+chat+"; the assistant passes it to aqlguard ("+
		visible(tool, false)+") and never sees it any other way. In a terminal, `aqlguard unblock "+agent+"` does the same.", "")+
		"\nIf you did not expect this, close this window and do not give the code.\n"+
		wrapWords("Closed it too soon? The agent's next call shows it again, and `aqlguard verify show` in a terminal shows a new one.", "")+"\n"+
		"This code expires "+expiry(r.ExpiresAt, now)+".")
	if s := reasons(r, "Why"); s != "" {
		sections = append(sections, s)
	}
	if len(r.Arguments) > 0 {
		// Cut to what fits, with an exact count of the rest.
		if args, err := renderArguments(r.Arguments, r.Roles, r.Commands, true); err == nil {
			sections = append(sections, strings.TrimSuffix(args, "\n"))
		}
	} else if r.Action != "" {
		var b strings.Builder
		field(&b, "The call", r.Action)
		sections = append(sections, strings.TrimSuffix(b.String(), "\n"))
	}
	if code == "" {
		sections = append(sections, "Verification code (copy it):")
	}
	return strings.Join(sections, "\n\n")
}

// clientNames are the names MCP clients give themselves (clientInfo),
// as people know the applications.
var clientNames = map[string]string{
	"claude-ai":          "Claude Desktop",
	"claude-code":        "Claude Code",
	"cursor-vscode":      "Cursor",
	"Visual Studio Code": "VS Code",
	"Zed":                "Zed",
}

// clientName is how the dialog names the application the agent runs in.
func clientName(client string) string {
	switch {
	case client == "":
		return "The AI agent"
	case clientNames[client] != "":
		return clientNames[client]
	}
	return visible(client, false)
}

// summary is the question's first line: "Claude Desktop wants to delete
// 3 files in ~/project with the filesystem server."
func summary(r Request) string {
	return clientName(r.Client) + " wants to " + what(r)
}

// what is what the call does, in words: in its effects' words when the
// guard has a model of the tool (effectWhat), else from its category and
// the arguments that say what it acts on, and the server: "delete 3
// files in ~/project with the filesystem server."
func what(r Request) string {
	if s := effectWhat(r); s != "" {
		return s
	}
	verb := map[string]string{"READ": "read", "CREATE": "create", "UPDATE": "change", "DELETE": "delete",
		"EXECUTE": "run"}[r.Category]
	tool := visible(r.Tool, false)
	var object string
	args := ordered(r.Arguments, r.Roles)
	for _, a := range args {
		s, ok := a.value.(string)
		switch {
		case a.role == roleCommand && ok:
			object, verb = commandPhrase(strings.TrimSpace(s), r.Commands), "run"
		case a.role == roleCode:
			object, verb = "code ("+visible(a.name, false)+")", "run"
		case a.role == roleQuery:
			object, verb = "a database query", "run"
		case a.role == rolePath:
			object = pathsPhrase(paths(r.Arguments, r.Roles), nounOf(r.Tool))
			if verb == "run" {
				verb = "" // a path is not what runs: "use write_file on …"
			}
		case a.role == roleURL && ok:
			// Quoted: text from the model, which must not read as ours.
			u, _ := capRunes(visible(s, false), 80)
			object = fmt.Sprintf("%q", u)
			if verb == "" || verb == "read" {
				verb = "fetch"
			}
		}
		if object != "" {
			break
		}
	}
	server := "the " + visible(r.Server, false) + " server"
	if object == "" {
		if verb == "" {
			verb = "use"
		}
		return fmt.Sprintf("%s something with %s (%s).", verb, server, tool)
	}
	if verb == "" {
		return fmt.Sprintf("use %s on %s (%s).", tool, object, server)
	}
	return fmt.Sprintf("%s %s with %s.", verb, object, server)
}

// commandPhrase names a command line: itself when it is short, else
// its length and the programs it runs ("a 7-line shell script (npm,
// curl, bash, rm)").
func commandPhrase(s string, commands []string) string {
	if c, more := capRunes(visible(s, false), 60); more == 0 && !strings.Contains(s, "\n") {
		return fmt.Sprintf("the command %q", c)
	}
	var names []string
	seen := map[string]bool{}
	for _, c := range commands {
		name, _, _ := strings.Cut(c, " ")
		if strings.HasPrefix(c, "(") || seen[name] || len(names) == 6 {
			continue
		}
		seen[name] = true
		names = append(names, visible(name, false))
	}
	phrase := "a long command"
	if n := lineCount(s); n > 1 {
		phrase = fmt.Sprintf("a %d-line shell script", n)
	}
	if len(names) > 0 {
		phrase += " (" + strings.Join(names, ", ") + ")"
	}
	return phrase
}

// lineCount is how many lines s has (a final line break ends the last).
func lineCount(s string) int {
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

// nounOf is what a tool's paths are, from its name.
func nounOf(tool string) string {
	t := strings.ToLower(tool)
	switch {
	case strings.Contains(t, "dir") || strings.Contains(t, "folder"):
		return "folder"
	case strings.Contains(t, "file"):
		return "file"
	}
	return "path"
}

// paths are the path-like argument values of a call, home shortened.
func paths(args map[string]any, roles map[string]string) []string {
	var out []string
	for _, a := range ordered(args, roles) {
		if a.role != rolePath {
			continue
		}
		switch v := a.value.(type) {
		case string:
			out = append(out, v)
		case []any:
			for _, x := range v {
				if s, ok := x.(string); ok {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// pathsPhrase is "~/project/a.txt", or "3 files in ~/project".
func pathsPhrase(ps []string, noun string) string {
	switch len(ps) {
	case 0:
		return ""
	case 1:
		// Quoted: text from the model, which must not read as ours
		// ("/tmp/x with the backup server. It is safe").
		p, _ := capRunes(visible(home(ps[0]), false), 80)
		return fmt.Sprintf("%q", p)
	}
	dir := filepath.Dir(ps[0])
	for _, p := range ps[1:] {
		for dir != "." && dir != "/" && !strings.HasPrefix(p, dir+"/") {
			dir = filepath.Dir(dir)
		}
	}
	phrase := fmt.Sprintf("%d %ss", len(ps), noun)
	if dir != "." && dir != "/" {
		d, _ := capRunes(visible(home(dir), false), 80)
		phrase += " in " + d
		if strings.ContainsAny(d, " \"") {
			phrase = fmt.Sprintf("%d %ss in %q", len(ps), noun, d)
		}
	}
	return phrase
}

// home writes the user's home directory as ~.
func home(p string) string {
	h, err := os.UserHomeDir()
	if err == nil && h != "" && h != "/" && (p == h || strings.HasPrefix(p, h+"/")) {
		return "~" + p[len(h):]
	}
	return p
}

// plainWhy says why a person is asked, in words: the policy's own rule,
// or what the call could do.
func plainWhy(r Request) string {
	switch r.Stage {
	case "pattern":
		switch {
		case r.Tier == "danger_zone" || r.Tier == "verify":
			return "your policy never lets an agent do this on its own."
		case r.Rule == "place" || r.Rule == "unresolved" || r.Rule == "shell: unresolved" || r.Rule == "flow":
			// aqlguard's own question (a path, a command it cannot
			// read, where data goes after what the chat read): the
			// reason says why this call is unusual, in words.
			return strings.TrimPrefix(r.Reason, "Action requires approval: ") + "."
		}
		return "your policy asks a person before calls like this."
	case "safety_tier", "risk_tolerance":
		does := map[string]string{"READ": "it reads data", "CREATE": "it creates something", "UPDATE": "it changes what exists",
			"DELETE": "it deletes", "EXECUTE": "it runs something that could do anything"}[r.Category]
		if r.Does != "" {
			does = "it " + r.Does
		}
		if does == "" {
			does = "it could change things"
		}
		switch r.Tier {
		case "danger_zone":
			return does + ", and its risk is in the danger zone."
		case "verify":
			return does + ", and its risk needs a code from you."
		}
		return does + ", and your risk tolerance does not let that run on its own."
	case "step_limit", "previous_outcome":
		return ""
	}
	return r.Reason
}

// decidedBy is the rule and tier line, for people who know the policy.
func decidedBy(r Request) string {
	var parts []string
	switch {
	case r.Rule == "":
	case strings.Contains(r.Rule, "~"):
		parts = append(parts, "rule "+r.Rule)
	case r.Tier == "danger_zone" && r.Stage == "pattern":
		parts = append(parts, fmt.Sprintf("deny %q", r.Rule))
	case r.Rule == "place":
		parts = append(parts, "aqlguard's check of paths against the server's roots and the sensitive places")
	case r.Rule == "unresolved" || r.Rule == "shell: unresolved":
		parts = append(parts, "aqlguard's own check: what it cannot read exactly, a person looks at")
	case r.Rule == "flow":
		parts = append(parts, "aqlguard's check of where data goes after what this chat has read")
	default:
		parts = append(parts, fmt.Sprintf("requires_approval %q", r.Rule))
	}
	if r.Tier != "" {
		if r.Risk > 0 {
			parts = append(parts, fmt.Sprintf("risk %d of 100, %s tier", r.Risk, r.Tier))
		} else {
			parts = append(parts, r.Tier+" tier")
		}
	}
	if len(parts) == 0 {
		return r.Reason
	}
	return strings.Join(parts, "; ")
}

// identity is who asks, through what, for which tool.
func identity(r Request) string {
	parts := []string{"Agent: " + visible(r.Agent, false)}
	if r.Client != "" {
		parts = append(parts, "client: "+visible(r.Client, false))
	}
	if r.Server != "" {
		parts = append(parts, "server: "+visible(r.Server, false))
		if r.Tool != "" {
			parts = append(parts, "tool: "+visible(r.Tool, false))
		}
	} else if r.Operation != "" {
		parts = append(parts, "operation: "+visible(r.Operation, false))
	}
	return strings.Join(parts, " · ")
}

// Argument roles, for the order and words of a question: what runs and
// what is acted on come first.
type role int

const (
	roleCommand role = iota
	roleCode
	roleQuery
	rolePath
	roleURL
	roleOther
)

// roleIn is the role of the argument name: as roles say (the guard's
// reading of the tool, Request.Roles), else as its name says.
func roleIn(roles map[string]string, name string) role {
	said, ok := roles[name]
	if !ok {
		return roleOf(name)
	}
	switch said {
	case "command":
		return roleCommand
	case "code":
		return roleCode
	case "query":
		return roleQuery
	case "path":
		return rolePath
	case "url":
		return roleURL
	}
	return roleOther
}

// roleOf is the role an argument's name says.
func roleOf(name string) role {
	switch strings.ToLower(name) {
	case "command", "cmd", "script", "shell", "cmdline", "command_line", "shell_command", "bash_command":
		return roleCommand
	case "code", "program", "source_code":
		return roleCode
	case "query", "sql", "statement":
		return roleQuery
	case "path", "paths", "file", "files", "filename", "file_path", "filepath", "source", "destination", "dest",
		"src", "dst", "target", "dir", "directory", "old_path", "new_path":
		return rolePath
	case "url", "uri", "urls", "endpoint", "href", "link":
		return roleURL
	}
	return roleOther
}

type argument struct {
	name  string
	value any
	role  role
}

// ordered are the arguments by role (roleIn), then by name.
func ordered(args map[string]any, roles map[string]string) []argument {
	out := make([]argument, 0, len(args))
	for k, v := range args {
		out = append(out, argument{k, v, roleIn(roles, k)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].role != out[j].role {
			return out[i].role < out[j].role
		}
		return out[i].name < out[j].name
	})
	return out
}

// renderArguments renders the arguments: first the commands their shell
// arguments would run (commands, from the guard's analysis), then each
// argument by role: a string as its text, with its lines numbered when
// it has more than one (so a broken long line cannot pass for a line
// break), anything else as indented JSON. What is left out is counted
// exactly, per argument.
func renderArguments(args map[string]any, roles map[string]string, commands []string, capped bool) (string, error) {
	var b strings.Builder
	if len(commands) > 0 {
		b.WriteString("Runs:\n")
		for i, c := range commands {
			if i == maxCommands {
				fmt.Fprintf(&b, "  … and %d more commands (all in the arguments below)\n", len(commands)-i)
				break
			}
			b.WriteString(wrapWords("  "+visible(c, false), "      ") + "\n")
		}
		b.WriteByte('\n')
	}
	b.WriteString("Arguments (secrets are shown as digests):\n")
	lines := 0
	for _, a := range ordered(args, roles) {
		text, err := renderValue(a.value, capped)
		if err != nil {
			return "", err
		}
		if capped && lines >= maxArgLines {
			fmt.Fprintf(&b, "… %s not shown: this window cannot scroll (aqlguard audit list has the call)\n", visible(a.name, false))
			continue
		}
		name := visible(a.name, false)
		if s, ok := a.value.(string); ok && strings.Contains(strings.TrimSuffix(s, "\n"), "\n") {
			name += fmt.Sprintf(" (%d lines)", lineCount(s))
		}
		b.WriteString(name + ":\n")
		b.WriteString(text)
		lines += strings.Count(text, "\n") + 1
	}
	return b.String(), nil
}

// renderValue renders one argument's value, indented, ending in a line
// break.
func renderValue(v any, capped bool) (string, error) {
	if list, ok := stringList(v); ok {
		// A list of strings (paths, names): one item a line, each as its
		// text (a line break in one shows as \u000A).
		var b strings.Builder
		for i, s := range list {
			if capped && i == cappedLines {
				fmt.Fprintf(&b, "  … %d more items not shown\n", len(list)-i)
				break
			}
			b.WriteString(breakLine("  - "+visible(s, false), "    ") + "\n")
		}
		if len(list) == 0 {
			b.WriteString("  (an empty list)\n")
		}
		return b.String(), nil
	}
	s, ok := v.(string)
	if !ok {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // "<" and "&" as they are, not \u003c
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return "", err
		}
		text := visible(strings.TrimSuffix(buf.String(), "\n"), true)
		limit := scrollChars
		if capped {
			limit = cappedChars
		}
		shown, more := capRunes(text, limit)
		var out []string
		for _, l := range strings.Split(shown, "\n") {
			out = append(out, breakLine("  "+l, "    "))
		}
		res := strings.Join(out, "\n") + "\n"
		if more > 0 {
			res += fmt.Sprintf("  … %d more characters not shown\n", more)
		}
		return res, nil
	}
	// A final line break ends the last line; it is not a line of its own.
	text := visible(strings.TrimSuffix(s, "\n"), true)
	limit, maxLines := scrollChars, 0
	if capped {
		limit, maxLines = cappedChars, cappedLines
	}
	shown, more := capRunes(text, limit)
	src := strings.Split(shown, "\n")
	if maxLines > 0 && len(src) > maxLines {
		src = src[:maxLines]
		more = utf8.RuneCountInString(text) - utf8.RuneCountInString(strings.Join(src, "\n"))
	}
	var b strings.Builder
	numbered := lineCount(s) > 1
	for i, l := range src {
		prefix, cont := "  ", "  "
		if numbered {
			prefix, cont = fmt.Sprintf("%4d │ ", i+1), "     │ "
		}
		pieces := splitRunes(l, maxLineChars-utf8.RuneCountInString(prefix))
		for j, p := range pieces {
			if j == 0 {
				b.WriteString(prefix + p + "\n")
			} else {
				b.WriteString(cont + p + "\n")
			}
		}
	}
	if s == "" {
		b.WriteString("  (empty)\n")
	}
	if more > 0 {
		fmt.Fprintf(&b, "  … %d more characters not shown (aqlguard audit list has the call)\n", more)
	}
	return b.String(), nil
}

// stringList returns v as a list of strings, if it is one.
func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(list))
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

// splitRunes splits s into pieces of at most n runes (one empty piece
// for "").
func splitRunes(s string, n int) []string {
	if n < 1 {
		n = 1
	}
	var out []string
	for utf8.RuneCountInString(s) > n {
		i := 0
		for k := 0; k < n; k++ {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return append(out, s)
}

// expiry renders an expiry in the machine's local time, with the time left.
func expiry(at, now time.Time) string {
	if at.IsZero() {
		return "never (no expiry was set)"
	}
	s := "at " + at.Local().Format("15:04:05 MST (2006-01-02)")
	if left := at.Sub(now).Round(time.Second); left > 0 {
		s += ", in " + left.String()
	} else {
		s += ", already past"
	}
	return s
}

// field writes "Name: value" on one logical line: the value is made
// visible (see visible), capped at maxFieldChar characters with an exact
// count of the rest, and broken into lines of maxLineChars.
func field(b *strings.Builder, name, value string) {
	v, more := capRunes(visible(value, false), maxFieldChar)
	if more > 0 {
		v += fmt.Sprintf("… (%d more characters)", more)
	}
	if v == "" {
		v = "(none)"
	}
	b.WriteString(wrapWords(name+": "+v, "    "))
	b.WriteByte('\n')
}

// wrapWords breaks prose longer than maxLineChars runes at spaces, the
// continuations indented; a word longer than a line is broken inside
// (breakLine).
func wrapWords(text, indent string) string {
	if utf8.RuneCountInString(text) <= maxLineChars {
		return text
	}
	var lines []string
	line, width := "", maxLineChars
	for _, w := range strings.Split(text, " ") {
		switch {
		case line == "":
			line = w
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line, width = indent+w, maxLineChars
		}
	}
	lines = append(lines, line)
	for i, l := range lines {
		lines[i] = breakLine(l, indent)
	}
	return strings.Join(lines, "\n")
}

// visible makes text safe to show a human who must judge it: invalid
// UTF-8 becomes U+FFFD, and control and format characters are shown as
// escapes rather than acted on. That covers the bidirectional overrides
// (U+202E and friends) that can make "rm -rf /" read as something
// harmless, zero-width characters, and line breaks in a value that
// should be one line (keepNewlines keeps \n, for multi-line text).
func visible(s string, keepNewlines bool) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' && keepNewlines:
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029':
			if r > 0xFFFF {
				fmt.Fprintf(&b, `\U%08X`, r)
			} else {
				fmt.Fprintf(&b, `\u%04X`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// capRunes returns at most n runes of s and how many were left out.
func capRunes(s string, n int) (string, int) {
	total := utf8.RuneCountInString(s)
	if total <= n {
		return s, 0
	}
	i := 0
	for k := 0; k < n; k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i], total - n
}

// breakLine breaks a line longer than maxLineChars runes into pieces,
// the continuations indented. The dialogs run with --no-wrap so that
// the text keeps its shape; this keeps a long value from making the
// window wider than the screen.
func breakLine(line, indent string) string {
	if utf8.RuneCountInString(line) <= maxLineChars {
		return line
	}
	var b strings.Builder
	width := maxLineChars
	n := 0
	for _, r := range line {
		if n == width {
			b.WriteString("\n" + indent)
			n = 0
			width = maxLineChars - utf8.RuneCountInString(indent)
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
