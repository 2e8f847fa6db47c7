package clientconfig

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tailscale/hujson"
)

// The hooks aqlguard installs in a client's user settings, so that the
// client's own tools (its shell, its file edits) are put to the guard by
// `aqlguard hook CLIENT` (package hook). Each is one element init adds
// to an event's list, said in the client's own schema (its docs are
// cited in package hook); unwrap removes exactly those elements, and the
// event list or hooks object init created for them when nothing else is
// left in it, and nothing else. The rest of the file keeps its bytes: the
// elements are inserted by a JSON patch on hujson's tree, which keeps
// comments and formatting around them.

// HookFile is a client's user-scope settings file that takes hooks.
type HookFile struct {
	Client string
	Path   string
	// Top are members a new file starts with (Cursor's "version": 1).
	Top map[string]any
	// Events are the elements init adds, by event.
	Events []HookEvent
}

// HookEvent is one event's element.
type HookEvent struct {
	Name string
	// Entry builds the element for a hook command.
	Entry func(command string) map[string]any
}

// The matchers are regular expressions in both clients; anchored, so
// that Write is not TodoWrite.

// hookTimeout is the time limit init gives each hook, in seconds:
// `aqlguard hook` answers 10 s before it.
const hookTimeout = 60

// HookFiles are the clients' hook files for env, existing or not.
func HookFiles(env Env) []HookFile {
	env = env.filled()
	group := func(matcher string, timeout int) func(string) map[string]any {
		return func(cmd string) map[string]any {
			return map[string]any{"matcher": matcher, "hooks": []any{map[string]any{"type": "command", "command": cmd, "timeout": timeout}}}
		}
	}
	cursor := func(matcher string) func(string) map[string]any {
		return func(cmd string) map[string]any {
			e := map[string]any{"command": cmd, "timeout": hookTimeout, "failClosed": true}
			if matcher != "" {
				e["matcher"] = matcher
			}
			return e
		}
	}
	return []HookFile{
		{Client: "claude-code", Path: filepath.Join(env.Home, ".claude", "settings.json"), Events: []HookEvent{
			{"PreToolUse", group("^(Bash|Write|Edit|MultiEdit|NotebookEdit|Read|Grep|mcp__.*)$", hookTimeout)}}},
		{Client: "cursor", Path: filepath.Join(env.Home, ".cursor", "hooks.json"), Top: map[string]any{"version": 1}, Events: []HookEvent{
			{"beforeShellExecution", cursor("")},
			{"beforeMCPExecution", cursor("")},
			{"beforeReadFile", cursor("")},
			{"preToolUse", cursor("Write|Edit|StrReplace|MultiEdit|Delete")}}},
		{Client: "gemini", Path: filepath.Join(env.Home, ".gemini", "settings.json"), Events: []HookEvent{
			{"BeforeTool", group("^(run_shell_command|write_file|replace|read_file|mcp__.*)$", hookTimeout*1000)}}},
	}
}

// HookCommand is the command line of client's hook: self (quoted for a
// shell where it needs it) hook CLIENT --agent CLIENT, the principal
// init gives the client's wrapped servers.
func HookCommand(self, client string) string {
	return shellWord(self) + " hook " + client + " --agent " + client
}

func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isOurs reports whether a hook command runs an aqlguard hook: self or
// a binary named aqlguard, verb hook.
func isOurs(cmd, self string) bool {
	for _, bin := range []string{shellWord(self), "aqlguard"} {
		if bin != "" && strings.HasPrefix(cmd, bin+" hook ") {
			return true
		}
	}
	f := strings.Fields(cmd)
	return len(f) > 1 && f[1] == "hook" && strings.TrimSuffix(filepath.Base(strings.Trim(f[0], `'"`)), ".exe") == "aqlguard"
}

// commandsOf are the hook commands of one element: its own command
// (Cursor) or its group's (Claude Code, Gemini CLI).
func commandsOf(el any) []string {
	m, _ := el.(map[string]any)
	var out []string
	if c, ok := m["command"].(string); ok {
		out = append(out, c)
	}
	hs, _ := m["hooks"].([]any)
	for _, h := range hs {
		if hm, ok := h.(map[string]any); ok {
			if c, ok := hm["command"].(string); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// hookRecordEntry names the record of one event's element: what init created
// for it ("hooks", "event" or "" when it appended to a list that was
// there), so that unwrap removes that and no more.
// A NUL first: no server entry's key starts with one (Entry.Key), so a
// server named "hook PreToolUse" in the same file (Gemini CLI keeps its
// servers and its hooks in one) is never taken for it.
func hookRecordEntry(event string) string { return "\x00hook " + event }

// readHooks decodes data's hooks object (data may be JSONC).
func readHooks(data []byte) (map[string]any, map[string][]any, error) {
	std, err := hujson.Standardize(append([]byte(nil), data...))
	if err != nil {
		return nil, nil, err
	}
	var top map[string]any
	if err := json.Unmarshal(std, &top); err != nil {
		return nil, nil, err
	}
	if top == nil {
		return nil, nil, fmt.Errorf("the file is not a JSON object")
	}
	events := map[string][]any{}
	if h, ok := top["hooks"]; ok {
		hm, ok := h.(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf(`"hooks" is not an object`)
		}
		for k, v := range hm {
			list, ok := v.([]any)
			if !ok {
				return nil, nil, fmt.Errorf(`"hooks.%s" is not a list`, k)
			}
			events[k] = list
		}
	}
	return top, events, nil
}

func pointer(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
	}
	return b.String()
}

// patch applies ops to data with hujson, keeping the rest's bytes; what
// an "add" inserts is laid out as its siblings are (layOut).
func patch(data []byte, ops []map[string]any) ([]byte, error) {
	if len(ops) == 0 {
		return data, nil
	}
	v, err := hujson.Parse(data)
	if err != nil {
		return nil, err
	}
	p, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	if err := v.Patch(p); err != nil {
		return nil, err
	}
	unit := indentUnit(&v)
	for _, op := range ops {
		if op["op"] == "add" && unit != "" {
			layOut(&v, op["path"].(string), unit)
		}
	}
	return v.Pack(), nil
}

// indentUnit is the file's indentation step, as its first member is
// indented ("" for a file on one line: inserted values stay compact).
func indentUnit(v *hujson.Value) string {
	obj, ok := v.Value.(*hujson.Object)
	if !ok || len(obj.Members) == 0 {
		return "  "
	}
	before := string(obj.Members[0].Name.BeforeExtra)
	i := strings.LastIndexByte(before, '\n')
	if i < 0 {
		return ""
	}
	return before[i+1:]
}

// layOut puts the value an add inserted at path on a line of its own,
// indented as the sibling before it (or one step inside its parent),
// and indents the value's own members below it.
func layOut(v *hujson.Value, path, unit string) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	cur := v
	depth := 0
	for _, p := range parts[:len(parts)-1] {
		obj, ok := cur.Value.(*hujson.Object)
		if !ok {
			return
		}
		name := strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
		found := false
		for i := range obj.Members {
			var k string
			if lit, ok := obj.Members[i].Name.Value.(hujson.Literal); ok && json.Unmarshal(lit, &k) == nil && k == name {
				cur, found = &obj.Members[i].Value, true
				break
			}
		}
		if !found {
			return
		}
		depth++
	}
	indent := strings.Repeat(unit, depth+1)
	var before *hujson.Extra
	var value *hujson.Value
	switch c := cur.Value.(type) {
	case *hujson.Object:
		if len(c.Members) == 0 {
			return
		}
		m := &c.Members[len(c.Members)-1]
		before, value = &m.Name.BeforeExtra, &m.Value
		if len(c.Members) > 1 && !strings.Contains(string(c.Members[len(c.Members)-2].Name.BeforeExtra), "\n") {
			return // its siblings share a line: so does it
		}
	case *hujson.Array:
		if len(c.Elements) == 0 {
			return
		}
		value = &c.Elements[len(c.Elements)-1]
		before = &value.BeforeExtra
		if len(c.Elements) > 1 && !strings.Contains(string(c.Elements[len(c.Elements)-2].BeforeExtra), "\n") {
			return
		}
	default:
		return
	}
	bare := hujson.Value{Value: value.Value}
	var x any
	if json.Unmarshal(bare.Pack(), &x) != nil {
		return
	}
	text, err := json.MarshalIndent(x, indent, unit)
	if err != nil {
		return
	}
	laid, err := hujson.Parse(text)
	if err != nil {
		return
	}
	*before = hujson.Extra("\n" + indent)
	value.Value = laid.Value
	if _, isObj := cur.Value.(*hujson.Object); isObj {
		value.BeforeExtra = hujson.Extra(" ")
	}
}

// InstallHooks adds f's hook elements running self to data (nil: the
// file does not exist), recording what it created in recs.
func InstallHooks(f HookFile, data []byte, self string, recs *Records, now time.Time) ([]byte, []Result, error) {
	if data == nil {
		if recs != nil {
			recs.put(Record{File: f.Path, Entry: hookFileEntry, Client: f.Client, Original: "created", WrappedAt: now})
		}
		top := map[string]any{}
		for k, v := range f.Top {
			top[k] = v
		}
		b, err := json.MarshalIndent(top, "", "  ")
		if err != nil {
			return nil, nil, err
		}
		data = append(b, '\n')
	}
	_, events, err := readHooks(data)
	if err != nil {
		return nil, nil, err
	}
	_, hasHooks := readTopKey(data, "hooks")
	cmd := HookCommand(self, f.Client)
	var ops []map[string]any
	var results []Result
	for _, ev := range f.Events {
		installed := false
		for _, el := range events[ev.Name] {
			for _, c := range commandsOf(el) {
				installed = installed || isOurs(c, self)
			}
		}
		if installed {
			results = append(results, Result{Entry: ev.Name, Action: "hook already installed"})
			continue
		}
		entry := ev.Entry(cmd)
		created := ""
		switch {
		case !hasHooks:
			ops = append(ops, map[string]any{"op": "add", "path": pointer("hooks"), "value": map[string]any{ev.Name: []any{entry}}})
			hasHooks, created = true, "hooks"
			events[ev.Name] = []any{entry}
		case events[ev.Name] == nil:
			ops = append(ops, map[string]any{"op": "add", "path": pointer("hooks", ev.Name), "value": []any{entry}})
			created = "event"
			events[ev.Name] = []any{entry}
		default:
			ops = append(ops, map[string]any{"op": "add", "path": pointer("hooks", ev.Name) + "/-", "value": entry})
		}
		if recs != nil {
			recs.put(Record{File: f.Path, Entry: hookRecordEntry(ev.Name), Client: f.Client, Original: created, WrappedAt: now})
		}
		results = append(results, Result{Entry: ev.Name, Action: "hook installed"})
	}
	out, err := patch(data, ops)
	if err != nil {
		return nil, nil, fmt.Errorf("adding the hooks: %w", err)
	}
	return out, results, nil
}

// readTopKey reports whether data's top object has key.
func readTopKey(data []byte, key string) (any, bool) {
	top, _, err := readHooks(data)
	if err != nil {
		return nil, false
	}
	v, ok := top[key]
	return v, ok
}

// hookFileEntry is the record of a hook file init created.
const hookFileEntry = "\x00hook file"

// CreatedEmpty reports whether init created f's file and data holds no
// more than it started the file with (f.Top): unwrap then removes the
// file; it forgets the record either way once no hook of ours is left.
func CreatedEmpty(f HookFile, data []byte, self string, recs *Records) bool {
	if recs == nil {
		return false
	}
	r, ok := recs.Get(f.Path, hookFileEntry)
	if !ok || r.Original != "created" {
		return false
	}
	top, events, err := readHooks(data)
	if err != nil {
		return false
	}
	if left, _ := InstalledHooks(data, self); len(left) > 0 {
		return false
	}
	recs.remove(f.Path, hookFileEntry)
	if len(events) > 0 {
		return false
	}
	for k, v := range top {
		want, ok := f.Top[k]
		if k == "hooks" {
			continue
		}
		if !ok || fmt.Sprint(want) != fmt.Sprint(v) {
			return false
		}
	}
	return true
}

// RemoveHooks removes from data every hook element that runs an aqlguard
// hook, and the event list or hooks object init created for it when it
// is left empty; it forgets their records.
func RemoveHooks(f HookFile, data []byte, self string, recs *Records) ([]byte, []Result, error) {
	_, events, err := readHooks(data)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(events))
	for k := range events {
		names = append(names, k)
	}
	sort.Strings(names)
	var ops []map[string]any
	var results []Result
	left := len(events)
	for _, name := range names {
		list := events[name]
		var ours []int
		for i, el := range list {
			cs := commandsOf(el)
			if len(cs) == 1 && isOurs(cs[0], self) {
				ours = append(ours, i)
			}
		}
		if len(ours) == 0 {
			continue
		}
		created := ""
		if recs != nil {
			if r, ok := recs.Get(f.Path, hookRecordEntry(name)); ok {
				created = r.Original
				recs.remove(f.Path, hookRecordEntry(name))
			}
		}
		if len(ours) == len(list) && created != "" {
			ops = append(ops, map[string]any{"op": "remove", "path": pointer("hooks", name)})
			left--
			if created == "hooks" && left == 0 {
				ops = []map[string]any{{"op": "remove", "path": pointer("hooks")}}
			}
		} else {
			for i := len(ours) - 1; i >= 0; i-- {
				ops = append(ops, map[string]any{"op": "remove", "path": pointer("hooks", name, strconv.Itoa(ours[i]))})
			}
		}
		results = append(results, Result{Entry: name, Action: "hook removed"})
	}
	out, err := patch(data, ops)
	if err != nil {
		return nil, nil, fmt.Errorf("removing the hooks: %w", err)
	}
	return out, results, nil
}

// InstalledHooks lists the events of data that run an aqlguard hook,
// with the command each runs.
func InstalledHooks(data []byte, self string) (map[string]string, error) {
	_, events, err := readHooks(data)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, list := range events {
		for _, el := range list {
			for _, c := range commandsOf(el) {
				if isOurs(c, self) {
					out[name] = c
				}
			}
		}
	}
	return out, nil
}
