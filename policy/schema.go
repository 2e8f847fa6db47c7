package policy

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/aqlguard/aqlguard/config"
)

// The schema walk goes over the TOML syntax tree once, before decoding, and
// checks every key against the Config type. go-toml's decoder stops at the
// first type error and only reports unknown keys when nothing else went
// wrong, so it cannot by itself tell a user everything that is wrong with a
// file; the walk can, and it also learns the line of every key so later
// semantic checks can point at the offending line.

type position struct{ line, col int }

// expr is one top-level TOML expression: a [table] or [[array]] header, or
// a key/value line (which may span lines, e.g. a multi-line array).
type expr struct {
	line       int
	header     bool
	arrayTable bool
	// bad expressions are blanked out before decoding, so the decoder only
	// sees what the walk accepted and can fill in everything else.
	bad bool
}

type keyPos struct {
	path string
	pos  position
}

type schemaWalker struct {
	p     *unstable.Parser
	file  string
	first map[string]position // indexed key path -> first place it appears
	all   []keyPos            // every key occurrence, for mapping decoder errors by line
	exprs []expr
	errs  config.Errors
	// bad holds the paths that already have a structural error, so semantic
	// checks do not pile a second, derived complaint onto them.
	bad      []string
	arrayIdx map[string]int

	prefix string
	typ    reflect.Type // nil while inside a table that was rejected
}

var (
	configType          = reflect.TypeFor[config.Config]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func newSchemaWalker(p *unstable.Parser, file string) *schemaWalker {
	return &schemaWalker{
		p:        p,
		file:     file,
		first:    map[string]position{},
		arrayIdx: map[string]int{},
		typ:      configType,
	}
}

// run walks the document. It returns false on a TOML syntax error, after
// which nothing more can be learned from the file.
func (w *schemaWalker) run() bool {
	for w.p.NextExpression() {
		e := w.p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			w.header(e)
		case unstable.KeyValue:
			w.keyValue(e)
		}
	}
	if err := w.p.Error(); err != nil {
		w.syntaxError(err)
		return false
	}
	return true
}

func (w *schemaWalker) syntaxError(err error) {
	e := config.Error{File: w.file, Msg: "invalid TOML: " + err.Error()}
	var perr *unstable.ParserError
	if errors.As(err, &perr) {
		e.Msg = "invalid TOML: " + perr.Message
		pos := w.highlightPos(perr.Highlight)
		e.Line, e.Column = pos.line, pos.col
	}
	w.errs = append(w.errs, e)
}

// highlightPos locates a parser highlight. The parser promises highlights
// are slices of its input; the recover keeps a broken promise from turning
// a config typo into a crash.
func (w *schemaWalker) highlightPos(h []byte) (pos position) {
	defer func() {
		if recover() != nil {
			pos = position{}
		}
	}()
	return w.position(w.p.Range(h))
}

func (w *schemaWalker) position(r unstable.Range) position {
	s := w.p.Shape(r)
	return position{s.Start.Line, s.Start.Column}
}

type keyPart struct {
	name string
	pos  position
}

func (w *schemaWalker) keyParts(n *unstable.Node) []keyPart {
	var parts []keyPart
	it := n.Key()
	for it.Next() {
		k := it.Node()
		parts = append(parts, keyPart{string(k.Data), w.position(k.Raw)})
	}
	return parts
}

func (w *schemaWalker) record(path string, pos position) {
	if _, ok := w.first[path]; !ok {
		w.first[path] = pos
	}
	w.all = append(w.all, keyPos{path, pos})
}

func (w *schemaWalker) fail(path string, pos position, msg string) {
	w.errs = append(w.errs, config.Error{File: w.file, Line: pos.line, Column: pos.col, Key: path, Msg: msg})
	w.bad = append(w.bad, path)
}

func (w *schemaWalker) header(e *unstable.Node) {
	parts := w.keyParts(e)
	if len(parts) == 0 { // the parser never produces this; be defensive
		w.typ = nil
		return
	}
	w.exprs = append(w.exprs, expr{line: parts[0].pos.line, header: true, arrayTable: e.Kind == unstable.ArrayTable})
	reject := func(path string, pos position, msg string) {
		w.fail(path, pos, msg)
		w.exprs[len(w.exprs)-1].bad = true
		w.prefix, w.typ = path, nil
	}
	t := configType
	path := ""
	for i, k := range parts {
		path = joinKey(path, k.name)
		ft, msg := lookupKey(t, k.name, "table")
		if msg != "" {
			reject(path, k.pos, msg)
			return
		}
		ft = deref(ft)
		if i < len(parts)-1 {
			switch {
			case isArrayOfTables(ft):
				n, ok := w.arrayIdx[path]
				if !ok {
					reject(path, k.pos, fmt.Sprintf("is an array of tables: add a [[%s]] entry before its sub-tables", path))
					return
				}
				path += "[" + strconv.Itoa(n) + "]"
				t = deref(ft.Elem())
			case isTable(ft):
				t = ft
			default:
				reject(path, k.pos, fmt.Sprintf("expected %s, not a table", describe(ft)))
				return
			}
			w.record(path, k.pos)
			continue
		}
		if e.Kind == unstable.ArrayTable {
			if !isArrayOfTables(ft) {
				reject(path, k.pos, fmt.Sprintf("expected %s, not an array of tables", describe(ft)))
				return
			}
			n, ok := w.arrayIdx[path]
			if !ok {
				n = -1
			}
			w.arrayIdx[path] = n + 1
			path += "[" + strconv.Itoa(n+1) + "]"
			t = deref(ft.Elem())
		} else {
			if isArrayOfTables(ft) {
				reject(path, k.pos, fmt.Sprintf("is an array of tables: write [[%s]]", path))
				return
			}
			if !isTable(ft) {
				reject(path, k.pos, fmt.Sprintf("expected %s, not a table", describe(ft)))
				return
			}
			t = ft
		}
	}
	w.record(path, parts[0].pos)
	w.prefix, w.typ = path, t
}

func (w *schemaWalker) keyValue(e *unstable.Node) {
	parts := w.keyParts(e)
	if len(parts) == 0 {
		return
	}
	w.exprs = append(w.exprs, expr{line: parts[0].pos.line})
	i := len(w.exprs) - 1
	if w.typ == nil {
		// Inside a rejected table: the table's error covers these keys.
		w.exprs[i].bad = true
		return
	}
	if !w.assign(w.prefix, w.typ, parts, e.Value()) {
		w.exprs[i].bad = true
	}
}

// assign checks one (possibly dotted) key and its value against table type t.
func (w *schemaWalker) assign(prefix string, t reflect.Type, parts []keyPart, v *unstable.Node) bool {
	path := prefix
	for i, k := range parts {
		path = joinKey(path, k.name)
		w.record(path, k.pos)
		ft, msg := lookupKey(t, k.name, "key")
		if msg != "" {
			w.fail(path, k.pos, msg)
			return false
		}
		if i < len(parts)-1 {
			ft = deref(ft)
			if !isTable(ft) {
				w.fail(path, k.pos, fmt.Sprintf("expected %s, not a table", describe(ft)))
				return false
			}
			t = ft
			continue
		}
		return w.value(path, k.pos, ft, v)
	}
	return false
}

// value checks a value node against Go type t, reporting every element of
// an array or inline table that is wrong rather than just the first.
func (w *schemaWalker) value(path string, pos position, t reflect.Type, v *unstable.Node) bool {
	if v == nil {
		return false
	}
	t = deref(t)
	mismatch := func() bool {
		w.fail(path, pos, fmt.Sprintf("expected %s, got %s", describe(t), kindName(v.Kind)))
		return false
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		if v.Kind != unstable.String {
			return mismatch()
		}
		u := reflect.New(t).Interface().(encoding.TextUnmarshaler)
		if err := u.UnmarshalText(v.Data); err != nil {
			w.fail(path, pos, err.Error())
			return false
		}
		return true
	}
	switch t.Kind() {
	case reflect.String:
		if v.Kind != unstable.String {
			return mismatch()
		}
	case reflect.Bool:
		if v.Kind != unstable.Bool {
			return mismatch()
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Kind != unstable.Integer {
			return mismatch()
		}
	case reflect.Float32, reflect.Float64:
		if v.Kind != unstable.Float && v.Kind != unstable.Integer {
			return mismatch()
		}
	case reflect.Slice:
		if v.Kind != unstable.Array {
			return mismatch()
		}
		ok := true
		it := v.Children()
		for i := 0; it.Next(); i++ {
			el := it.Node()
			ep := path + "[" + strconv.Itoa(i) + "]"
			epos := pos
			if el.Raw.Length > 0 { // nested arrays carry no range of their own
				epos = w.position(el.Raw)
			}
			w.record(ep, epos)
			if !w.value(ep, epos, t.Elem(), el) {
				ok = false
			}
		}
		return ok
	case reflect.Map, reflect.Struct:
		if v.Kind != unstable.InlineTable {
			return mismatch()
		}
		ok := true
		it := v.Children()
		for it.Next() {
			kv := it.Node()
			if kv.Kind != unstable.KeyValue {
				continue
			}
			if !w.assign(path, t, w.keyParts(kv), kv.Value()) {
				ok = false
			}
		}
		return ok
	}
	return true
}

// lookupKey finds the type a key names inside table type t. Struct fields
// match their toml tag exactly: go-toml would also accept "Deny" for "deny",
// but then a policy could set the same list twice under two spellings and
// have one silently replace the other.
func lookupKey(t reflect.Type, name, what string) (reflect.Type, string) {
	t = deref(t)
	switch t.Kind() {
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, "unsupported table"
		}
		return t.Elem(), ""
	case reflect.Struct:
		var names []string
		for f := range t.Fields() {
			tag := tomlName(f)
			if tag == "" {
				continue
			}
			if tag == name {
				return f.Type, ""
			}
			names = append(names, tag)
		}
		msg := "unknown " + what
		if s := suggest(name, names); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return nil, msg
	}
	return nil, fmt.Sprintf("expected %s, not a table", describe(t))
}

func tomlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	switch tag {
	case "-":
		return ""
	case "":
		return f.Name
	}
	return tag
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func isTextual(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(textUnmarshalerType)
}

func isTable(t reflect.Type) bool {
	t = deref(t)
	if isTextual(t) {
		return false
	}
	return t.Kind() == reflect.Struct || (t.Kind() == reflect.Map && t.Key().Kind() == reflect.String)
}

func isArrayOfTables(t reflect.Type) bool {
	t = deref(t)
	return t.Kind() == reflect.Slice && isTable(t.Elem())
}

// describe names a Go type the way a config author thinks of it.
func describe(t reflect.Type) string {
	t = deref(t)
	if t == reflect.TypeFor[config.Duration]() {
		return `a duration string such as "30s"`
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		switch e := deref(t.Elem()); {
		case isTable(e):
			return "an array of tables"
		case e.Kind() == reflect.String:
			return "an array of strings"
		}
		return "an array"
	case reflect.Map:
		if deref(t.Elem()).Kind() == reflect.String {
			return "a table of strings"
		}
		return "a table"
	case reflect.Struct:
		return "a table"
	}
	return t.String()
}

func kindName(k unstable.Kind) string {
	switch k {
	case unstable.String:
		return "a string"
	case unstable.Integer:
		return "an integer"
	case unstable.Float:
		return "a float"
	case unstable.Bool:
		return "a boolean"
	case unstable.Array:
		return "an array"
	case unstable.InlineTable:
		return "an inline table"
	case unstable.LocalDate, unstable.LocalTime, unstable.LocalDateTime, unstable.DateTime:
		return "a date/time"
	}
	return k.String()
}

// joinKey appends one key part, quoting it when it is not a TOML bare key,
// so `agents."ci.bot"` cannot be confused with agents.ci.bot.
func joinKey(prefix, part string) string {
	if !isBareKey(part) {
		part = strconv.Quote(part)
	}
	if prefix == "" {
		return part
	}
	return prefix + "." + part
}

func isBareKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Suggest returns the known name closest to a misspelt one ("" if none
// is close): a name of another case, or one at most two edits away.
func Suggest(name string, names []string) string { return suggest(name, names) }

// suggest returns the known name closest to a misspelt one, if any is close.
func suggest(name string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return n
		}
		if len(name) < 4 {
			continue
		}
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30 // not a typo of any key we have; skip the quadratic work
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
