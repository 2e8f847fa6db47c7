package effects

import (
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/aqlguard/aqlguard/policy"
)

// A tool no configuration or profile speaks for is read from its own
// definition. What it says is the server's word, so a human reviews it
// at first sight (the model is what the review shows); nothing read here
// is believed where it would let a call do more than the words say:
// an argument that is a command makes the tool one that executes,
// whatever its description says.

// schemaRoles are the roles an input schema gives its arguments, by
// SnakeName path: every declared property, nested objects and the
// objects of arrays included (an array's elements share its path).
func schemaRoles(schema map[string]any) map[string]policy.Role {
	out := map[string]policy.Role{}
	walkProperties(schema, "", 0, func(path, name string, prop map[string]any) {
		out[path] = propertyRole(name, prop)
	})
	return out
}

// maxSchemaDepth bounds how deep a schema is walked: a server's schema
// is untrusted input, and a self-referencing one must not recurse for
// ever (references are not followed at all).
const maxSchemaDepth = 8

// walkProperties calls fn for each property declared in schema, depth
// first, with its SnakeName path.
func walkProperties(schema map[string]any, prefix string, depth int, fn func(path, name string, prop map[string]any)) {
	if schema == nil || depth > maxSchemaDepth {
		return
	}
	props, _ := schema["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		prop, _ := props[n].(map[string]any)
		path := policy.SnakeName(n)
		if prefix != "" {
			path = prefix + "." + path
		}
		fn(path, n, prop)
		walkNested(prop, path, depth+1, fn)
	}
}

// walkNested walks what a property holds: its own properties, its
// items', and its combinators' alternatives.
func walkNested(prop map[string]any, path string, depth int, fn func(path, name string, prop map[string]any)) {
	if prop == nil || depth > maxSchemaDepth {
		return
	}
	walkProperties(prop, path, depth, fn)
	if items, ok := prop["items"].(map[string]any); ok {
		walkNested(items, path, depth+1, fn)
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		alts, _ := prop[k].([]any)
		for _, a := range alts {
			if m, ok := a.(map[string]any); ok {
				walkNested(m, path, depth+1, fn)
			}
		}
	}
}

// propertyRole is the role a declared property's schema gives it: a URI
// format is a URL; else what its description says it is; else what its
// name says (policy.RoleByConvention, and identifiers).
func propertyRole(name string, prop map[string]any) policy.Role {
	if f, _ := prop["format"].(string); f != "" {
		switch f {
		case "uri", "url", "iri", "uri-reference", "iri-reference":
			return policy.RoleURL
		}
	}
	if d, _ := prop["description"].(string); d != "" {
		if r, ok := roleFromWords(words(d)); ok {
			return r
		}
	}
	snake := policy.SnakeName(name)
	for _, form := range nameForms(snake) {
		if r := policy.RoleByConvention(form); r != policy.RoleOther {
			return r
		}
	}
	if isIdentifierName(snake) {
		return policy.RoleIdentifier
	}
	return policy.RoleOther
}

// roleFromWords reads the role an argument's description gives it, from
// phrases that leave no doubt ("the shell command to run", "SQL query",
// "path to the file").
func roleFromWords(ws []string) (policy.Role, bool) {
	for i, w := range ws {
		next := at(ws, i+1)
		switch w {
		case "command", "commands", "cmd":
			switch at(ws, i-1) {
			case "shell", "bash", "terminal", "system", "cli", "sh":
				return policy.RoleCommand, true
			}
			if next == "line" || next == "to" && (at(ws, i+2) == "run" || at(ws, i+2) == "execute") {
				return policy.RoleCommand, true
			}
		case "javascript", "typescript", "python", "lua", "ruby", "perl":
			if next == "code" || next == "script" || next == "expression" || next == "function" || next == "snippet" {
				return policy.RoleCode, true
			}
		case "code", "script":
			if next == "to" && (at(ws, i+2) == "run" || at(ws, i+2) == "execute" || at(ws, i+2) == "evaluate") {
				return policy.RoleCode, true
			}
		case "sql", "cypher", "graphql", "sparql":
			return policy.RoleQuery, true
		case "url", "urls", "uri", "uris":
			return policy.RoleURL, true
		case "path", "paths", "filepath", "filename":
			if w == "filepath" || w == "filename" || at(ws, i-1) == "file" || at(ws, i-1) == "directory" ||
				next == "to" || next == "of" {
				return policy.RolePath, true
			}
		}
	}
	return 0, false
}

// nameForms are an argument's name and the names it is a list of
// (fileslist, file_list and filenames are lists of files).
func nameForms(snake string) []string {
	out := []string{snake}
	for _, suffix := range []string{"_list", "list", "_array", "s"} {
		if base, ok := strings.CutSuffix(snake, suffix); ok && base != "" {
			out = append(out, base)
			if b, ok := strings.CutSuffix(base, "s"); ok && b != "" {
				out = append(out, b)
			}
		}
	}
	return out
}

// revealWords are the words, and revealPairs the pairs of words, that in
// a tool's own name say it hands out secrets ("token" alone is also what
// a language model counts).
var (
	revealWords = map[string]string{
		"credential": "credentials", "credentials": "credentials", "password": "passwords", "passwords": "passwords",
		"passwd": "passwords", "secret": "secrets", "secrets": "secrets", "apikey": "API keys", "apikeys": "API keys",
		"privatekey": "private keys", "keychain": "a keychain", "keyring": "a keyring",
	}
	revealPairs = map[string]string{
		"api_key": "API keys", "api_keys": "API keys", "private_key": "private keys", "private_keys": "private keys",
		"access_key": "access keys", "access_keys": "access keys", "ssh_key": "SSH keys", "ssh_keys": "SSH keys",
		"access_token": "access tokens", "auth_token": "tokens", "api_token": "API tokens", "bearer_token": "tokens",
		"refresh_token": "tokens", "session_token": "tokens", "oauth_token": "tokens",
	}
)

// reveals says what secrets a tool's own name says it hands out ("" for
// none): a tool that shows credentials is a read of a sensitive place.
func reveals(name string) string {
	words := strings.Split(policy.SnakeName(name), "_")
	for i, w := range words {
		if what, ok := revealWords[w]; ok {
			return what
		}
		if i+1 < len(words) {
			if what, ok := revealPairs[w+"_"+words[i+1]]; ok {
				return what
			}
		}
	}
	return ""
}

// isIdentifierName reports whether an argument's own name says it
// names a thing the tool acts on.
func isIdentifierName(snake string) bool {
	switch snake {
	case "id", "ids", "uuid", "owner", "repo", "repository", "issue_number", "pull_number", "entity_names", "names":
		return true
	}
	return strings.HasSuffix(snake, "_id") || strings.HasSuffix(snake, "_ids")
}

func at(ws []string, i int) string {
	if i < 0 || i >= len(ws) {
		return ""
	}
	return ws[i]
}

// words are text's words in lower case, letters and digits only.
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// inference is what a definition says of its effects.
type inference struct {
	effects policy.Effects
	source  policy.EffectSource
	why     string
}

// infer reads the effects from the schema's roles and the description,
// else guesses from the name's verb, else says nothing tells.
func infer(d Definition, roles map[string]policy.Role) inference {
	var e policy.Effects
	var because []string
	paths := make([]string, 0, len(roles))
	for p := range roles {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		switch roles[p] {
		case policy.RoleCommand:
			e = e.With(policy.EffectExecute)
			because = append(because, "its argument "+strconv.Quote(p)+" is a command")
		case policy.RoleCode:
			e = e.With(policy.EffectExecute)
			because = append(because, "its argument "+strconv.Quote(p)+" is code")
		case policy.RoleURL:
			if !e.Has(policy.EffectSend) {
				e = e.With(policy.EffectSend)
				because = append(because, "it is given a URL ("+strconv.Quote(p)+"), which leaves this machine")
			}
		}
	}
	if de, what, ok := fromDescription(d.Description); ok {
		e = e.Union(de)
		because = append(because, "its description says so ("+what+")")
	}
	if ve, ok := verbEffects(policy.SnakeName(d.Name)); ok && len(because) > 0 && ve&^e != 0 {
		// Its name is the server's word too: it may add what the schema
		// and the description left out (delete_x described as reading),
		// never take away.
		e = e.Union(ve)
		because = append(because, "its name "+strconv.Quote(d.Name)+" says it "+sayEffects(ve))
	}
	if len(because) > 0 {
		return inference{e, policy.SourceSchema, sayEffects(e) + " (" + strings.Join(because, "; ") + ")"}
	}
	if ve, ok := verbEffects(policy.SnakeName(d.Name)); ok {
		return inference{ve, policy.SourceGuess, sayEffects(ve) + " (a guess from its name " + strconv.Quote(d.Name) + ")"}
	}
	return inference{policy.Effects(policy.EffectUnknown), policy.SourceUnknown,
		"could do anything (neither its configuration, a profile, its schema, its description nor its name says what it does)"}
}

// effectWords are the verbs that say what a tool does, in their base
// form; a description's third person ("reads") and gerund are reduced to
// it (stem).
var effectWords = map[string]policy.Effects{
	// Nothing outside itself.
	"echo": 0, "ping": 0, "calculate": 0, "compute": 0, "convert": 0, "format": 0, "parse": 0,
	"validate": 0, "sum": 0, "multiply": 0, "think": 0, "reflect": 0, "plan": 0, "sleep": 0, "wait": 0,
	// Reads.
	"read": eff(policy.EffectRead), "get": eff(policy.EffectRead), "list": eff(policy.EffectRead),
	"search": eff(policy.EffectRead), "find": eff(policy.EffectRead), "show": eff(policy.EffectRead),
	"view": eff(policy.EffectRead), "describe": eff(policy.EffectRead), "query": eff(policy.EffectRead),
	"fetch": eff(policy.EffectRead), "retrieve": eff(policy.EffectRead), "return": eff(policy.EffectRead),
	"look": eff(policy.EffectRead), "lookup": eff(policy.EffectRead), "check": eff(policy.EffectRead),
	"inspect": eff(policy.EffectRead), "count": eff(policy.EffectRead), "open": eff(policy.EffectRead),
	"browse": eff(policy.EffectRead), "grep": eff(policy.EffectRead), "load": eff(policy.EffectRead),
	"download": eff(policy.EffectRead), "export": eff(policy.EffectRead), "analyze": eff(policy.EffectRead),
	"summarize": eff(policy.EffectRead), "compare": eff(policy.EffectRead), "diff": eff(policy.EffectRead),
	"status": eff(policy.EffectRead), "explain": eff(policy.EffectRead), "say": eff(policy.EffectRead),
	"tell": eff(policy.EffectRead), "report": eff(policy.EffectRead), "answer": eff(policy.EffectRead),
	// Writes.
	"write": eff(policy.EffectWrite), "create": eff(policy.EffectWrite), "add": eff(policy.EffectWrite),
	"update": eff(policy.EffectWrite), "edit": eff(policy.EffectWrite), "modify": eff(policy.EffectWrite),
	"set": eff(policy.EffectWrite), "save": eff(policy.EffectWrite), "insert": eff(policy.EffectWrite),
	"append": eff(policy.EffectWrite), "rename": eff(policy.EffectWrite), "move": eff(policy.EffectWrite),
	"copy": eff(policy.EffectWrite), "make": eff(policy.EffectWrite), "mkdir": eff(policy.EffectWrite),
	"replace": eff(policy.EffectWrite), "patch": eff(policy.EffectWrite), "overwrite": eff(policy.EffectWrite),
	"store": eff(policy.EffectWrite), "register": eff(policy.EffectWrite), "import": eff(policy.EffectWrite),
	"change": eff(policy.EffectWrite), "commit": eff(policy.EffectWrite), "generate": eff(policy.EffectWrite),
	"merge": eff(policy.EffectWrite), "record": eff(policy.EffectWrite),
	// Deletes.
	"delete": eff(policy.EffectDelete), "remove": eff(policy.EffectDelete), "erase": eff(policy.EffectDelete),
	"drop": eff(policy.EffectDelete), "destroy": eff(policy.EffectDelete), "purge": eff(policy.EffectDelete),
	"wipe": eff(policy.EffectDelete), "truncate": eff(policy.EffectDelete), "clear": eff(policy.EffectDelete),
	"unregister": eff(policy.EffectDelete), "rm": eff(policy.EffectDelete),
	// Executes.
	"execute": eff(policy.EffectExecute), "run": eff(policy.EffectExecute), "exec": eff(policy.EffectExecute),
	"eval": eff(policy.EffectExecute), "evaluate": eff(policy.EffectExecute), "invoke": eff(policy.EffectExecute),
	"start": eff(policy.EffectExecute), "stop": eff(policy.EffectExecute), "kill": eff(policy.EffectExecute),
	"install": eff(policy.EffectExecute), "deploy": eff(policy.EffectExecute), "trigger": eff(policy.EffectExecute),
	"launch": eff(policy.EffectExecute), "spawn": eff(policy.EffectExecute), "restart": eff(policy.EffectExecute),
	"build": eff(policy.EffectExecute), "compile": eff(policy.EffectExecute), "cancel": eff(policy.EffectExecute),
	"resume": eff(policy.EffectExecute),
	// Sends data out.
	"send": eff(policy.EffectSend), "post": eff(policy.EffectSend), "email": eff(policy.EffectSend),
	"mail": eff(policy.EffectSend), "upload": eff(policy.EffectSend), "publish": eff(policy.EffectSend),
	"push": eff(policy.EffectSend), "notify": eff(policy.EffectSend), "share": eff(policy.EffectSend),
	"tweet": eff(policy.EffectSend), "message": eff(policy.EffectSend), "transfer": eff(policy.EffectSend),
	"forward": eff(policy.EffectSend), "submit": eff(policy.EffectSend), "navigate": eff(policy.EffectSend),
	"buy": eff(policy.EffectSend), "pay": eff(policy.EffectSend), "order": eff(policy.EffectSend),
	"purchase": eff(policy.EffectSend), "call": eff(policy.EffectSend), "request": eff(policy.EffectSend),
}

func eff(e policy.Effect) policy.Effects { return policy.Effects(e) }

// anywhere are the words that, anywhere in a description, add their
// effect: running things and sending data out are what a guard must
// not miss, and honest descriptions use them only for what they do
// (where "remove" or "create" often describe a failure or an option).
var anywhere = map[string]policy.Effects{
	"execute": eff(policy.EffectExecute), "eval": eff(policy.EffectExecute), "shell": eff(policy.EffectExecute),
	"bash": eff(policy.EffectExecute), "subprocess": eff(policy.EffectExecute), "spawn": eff(policy.EffectExecute),
	"send": eff(policy.EffectSend), "email": eff(policy.EffectSend), "upload": eff(policy.EffectSend),
	"webhook": eff(policy.EffectSend), "publish": eff(policy.EffectSend), "exfiltrate": eff(policy.EffectSend),
}

// fillers are the words a description puts before its verb ("This tool
// is used to read ...", "Use this to list ...", "Tool that creates").
var fillers = map[string]bool{
	"this": true, "tool": true, "the": true, "a": true, "an": true, "is": true, "used": true, "to": true,
	"use": true, "can": true, "be": true, "that": true, "which": true, "will": true, "lets": true, "you": true,
	"allows": true, "it": true, "function": true, "helper": true, "simply": true, "just": true, "for": true,
	"summary": true, "please": true, "we": true, "i": true, "quickly": true, "efficiently": true, "safely": true,
}

// fromDescription reads a description's effects: the verb that leads
// its first sentence, and the words that count anywhere. what quotes
// those words, for the human.
func fromDescription(desc string) (policy.Effects, string, bool) {
	first := desc
	if i := strings.IndexAny(first, ".\n"); i >= 0 {
		first = first[:i]
	}
	var e policy.Effects
	var said []string
	found := false
	for i, w := range words(first) {
		if i >= 8 {
			break
		}
		if fillers[w] {
			continue
		}
		if ve, ok := effectWords[stem(w)]; ok {
			e, found = e.Union(ve), true
			said = append(said, strconv.Quote(w))
		}
		break
	}
	seen := map[string]bool{}
	for _, w := range words(desc) {
		s := stem(w)
		if ae, ok := anywhere[s]; ok && !seen[s] {
			seen[s] = true
			if e&ae != ae {
				e, found = e.Union(ae), true
				said = append(said, strconv.Quote(w))
			}
		}
	}
	if !found {
		return 0, "", false
	}
	return e, strings.Join(said, ", "), true
}

// stem reduces a verb's third person, gerund and past ("reads",
// "fetches", "running", "deleted") to what effectWords lists.
func stem(w string) string {
	if _, ok := effectWords[w]; ok {
		return w
	}
	for _, suffix := range []string{"es", "s", "ing", "ed", "d"} {
		if base, ok := strings.CutSuffix(w, suffix); ok && len(base) >= 2 {
			if _, known := effectWords[base]; known {
				return base
			}
			if _, known := anywhere[base]; known {
				return base
			}
			if n := len(base); n >= 2 && base[n-1] == base[n-2] { // running → run
				if _, known := effectWords[base[:n-1]]; known {
					return base[:n-1]
				}
			}
			if _, known := effectWords[base+"e"]; known { // executing → execute
				return base + "e"
			}
		}
	}
	return w
}

// verbEffects guesses from the verb a tool's own name starts with.
func verbEffects(snake string) (policy.Effects, bool) {
	head, _, _ := strings.Cut(snake, "_")
	e, ok := effectWords[stem(head)]
	return e, ok
}
