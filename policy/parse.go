package policy

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/aqlguard/aqlguard/config"
)

//go:embed default.toml
var defaultTOML []byte

// Load reads and parses the configuration file at path. A missing file is
// reported with an error that wraps fs.ErrNotExist, so callers can fall back
// to Default; every other problem is an Errors value.
func Load(path string) (*config.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// Default returns the configuration of no file at all: default.toml's
// settings (semantic mode, agent "default", no servers, an enforcing
// loop, the dialog channel). Its [safety] lists are empty, because the
// shipped rules (default.toml's lists) are beneath every configuration
// already: Compile puts them there (shipped.go), and this one holds none
// of its own. Each call returns a fresh Config the caller may modify.
func Default() *config.Config {
	cfg, err := Parse(defaultTOML, config.ShippedName)
	if err != nil {
		// The embedded file is a build input checked by TestDefault; reaching
		// this means the binary was built from a broken tree, and running
		// with no policy at all would be worse than stopping.
		panic("policy: embedded default.toml is invalid: " + err.Error())
	}
	cfg.Path = ""
	s := reflect.ValueOf(&cfg.Safety).Elem()
	for i := range s.NumField() {
		if s.Field(i).Kind() != reflect.Slice {
			continue
		}
		s.Field(i).SetZero()
		key := "safety." + tomlName(s.Type().Field(i))
		cfg.Forget(key)
	}
	return cfg
}

// Parse decodes and validates a configuration. name is used in error
// messages and stored in Config.Path. On success every default has been
// applied (see config.example.toml). On failure the error is an Errors value
// listing every problem that could be found, each with its line, and the
// Config is nil.
func Parse(data []byte, name string) (cfg *config.Config, err error) {
	return parse(data, name, false)
}

// parse is Parse; managed says the file is the managed policy layer,
// whose format is the same with one more key, locked.
func parse(data []byte, name string, managed bool) (cfg *config.Config, err error) {
	defer func() {
		// A panic in the TOML library must not take the proxy down in the
		// middle of a reload; report it as a problem with the file.
		if r := recover(); r != nil {
			cfg, err = nil, config.Errors{{File: name, Msg: fmt.Sprintf("internal error while reading configuration: %v", r)}}
		}
	}()

	// Windows editors like to start files with a byte order mark, which TOML
	// does not allow; it carries no meaning, so drop it.
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	// The parser locates a highlight by comparing slice capacities, which
	// only works when the buffer has no spare capacity.
	buf := make([]byte, len(data))
	copy(buf, data)

	var p unstable.Parser
	p.Reset(buf)
	w := newSchemaWalker(&p, name)
	if !w.run() {
		return nil, w.errs.Sorted()
	}

	c, shifted := w.decode(buf)
	if c != nil && !shifted {
		v := &validator{file: name, walker: w, managed: managed}
		v.config(c)
		w.errs = append(w.errs, v.errs...)
	}
	if len(w.errs) > 0 {
		return nil, w.errs.Sorted()
	}
	if c == nil { // decode gave up without saying why; never hand back a half config
		return nil, config.Errors{{File: name, Msg: "configuration could not be decoded"}}
	}
	c.Path = name
	for k, pos := range w.first {
		c.SetLine(k, pos.line)
	}
	return c, nil
}

// decode runs go-toml over the document with every expression the schema
// walk rejected blanked out. Anything the decoder still objects to (duplicate
// keys, integer overflow, ...) is recorded, its expression blanked too, and
// decoding retried, so one bad line does not hide the rest of the file.
// shifted reports that an [[array]] header had to be dropped, after which
// array indices in the decoded Config no longer match the file's.
func (w *schemaWalker) decode(data []byte) (cfg *config.Config, shifted bool) {
	for range len(w.exprs) + 1 {
		var c config.Config
		err := toml.NewDecoder(bytes.NewReader(w.sanitized(data))).DisallowUnknownFields().Decode(&c)
		if err == nil {
			return &c, shifted
		}
		var sme *toml.StrictMissingError
		if errors.As(err, &sme) {
			// Decoding ran to completion; only report what the walk missed.
			for i := range sme.Errors {
				w.decodeError(&sme.Errors[i])
			}
			return &c, shifted
		}
		var de *toml.DecodeError
		if !errors.As(err, &de) {
			w.errs = append(w.errs, config.Error{File: w.file, Msg: strings.TrimPrefix(err.Error(), "toml: ")})
			return nil, shifted
		}
		line := w.decodeError(de)
		i := w.exprAt(line)
		if i < 0 || w.exprs[i].bad {
			return nil, shifted // no way to make progress
		}
		w.exprs[i].bad = true
		if w.exprs[i].header {
			shifted = shifted || w.exprs[i].arrayTable
			for j := i + 1; j < len(w.exprs) && !w.exprs[j].header; j++ {
				w.exprs[j].bad = true
			}
		}
	}
	return nil, shifted
}

func (w *schemaWalker) decodeError(de *toml.DecodeError) int {
	line, col := de.Position()
	key := w.keyAt(de.Key(), line)
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	switch {
	case msg == "unknown field":
		msg = "unknown key"
	case msg == "missing table":
		msg = "unknown table"
	case strings.HasSuffix(msg, " is already defined"), strings.HasSuffix(msg, " already exists"):
		// The key is already in Error.Key; say what is wrong with it.
		msg = "is defined more than once"
	}
	w.errs = append(w.errs, config.Error{File: w.file, Line: line, Column: col, Key: key, Msg: msg})
	w.bad = append(w.bad, key)
	return line
}

// keyAt turns a decoder key, which has no array indices (servers.extra), into
// the indexed path the walk recorded on that line (servers[1].extra).
func (w *schemaWalker) keyAt(key toml.Key, line int) string {
	plain := ""
	for _, k := range key {
		plain = joinKey(plain, k)
	}
	// Some decoder errors carry the key relative to its table (name, not
	// servers.name); a suffix match on the same line recovers the full path.
	suffix := ""
	for _, kp := range w.all {
		if kp.pos.line != line {
			continue
		}
		switch s := stripIndices(kp.path); {
		case s == plain:
			return kp.path
		case suffix == "" && plain != "" && strings.HasSuffix(s, "."+plain):
			suffix = kp.path
		}
	}
	if suffix != "" {
		return suffix
	}
	return plain
}

func stripIndices(path string) string {
	if !strings.Contains(path, "[") {
		return path
	}
	var b strings.Builder
	inQuote, skip := false, false
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case inQuote:
			if c == '\\' && i+1 < len(path) {
				b.WriteByte(c)
				i++
				c = path[i]
			} else if c == '"' {
				inQuote = false
			}
		case skip:
			if c == ']' {
				skip = false
			}
			continue
		case c == '"':
			inQuote = true
		case c == '[':
			skip = true
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// exprAt finds the expression that owns a line.
func (w *schemaWalker) exprAt(line int) int {
	idx := -1
	for i, e := range w.exprs {
		if e.line > line {
			break
		}
		idx = i
	}
	return idx
}

// sanitized returns data with the lines of every bad expression replaced by
// spaces. Line and column numbers are unchanged, so decoder positions still
// point into the user's file.
func (w *schemaWalker) sanitized(data []byte) []byte {
	out := make([]byte, len(data))
	copy(out, data)
	var starts []int // byte offset of each line start, 1-based lines
	starts = append(starts, 0, 0)
	for i, c := range out {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	lineStart := func(l int) int {
		if l < 1 {
			return 0
		}
		if l >= len(starts) {
			return len(out)
		}
		return starts[l]
	}
	for i, e := range w.exprs {
		if !e.bad {
			continue
		}
		from, to := lineStart(e.line), len(out)
		if i+1 < len(w.exprs) {
			to = lineStart(w.exprs[i+1].line)
		}
		for j := from; j < to && j < len(out); j++ {
			if out[j] != '\n' {
				out[j] = ' '
			}
		}
	}
	return out
}
