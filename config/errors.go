package config

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Error is one problem found in a configuration. Line and Column are 1-based
// positions in the file; they are 0 when the problem has no place in a file
// (a Config built in Go and handed to Compile, or a required key that is
// absent from a file with no enclosing table to point at).
type Error struct {
	File   string
	Line   int
	Column int
	// Key is the dotted key path with array indices, e.g. "servers[1].url",
	// "safety.deny[2]" or `agents."ci.bot".loop`. Empty for syntax errors.
	Key string
	Msg string
}

// Error formats the problem as file:line: key: msg, the shape editors and
// CI annotators know how to jump to.
func (e Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("config")
	}
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem Parse or Compile found, in file order. It is
// returned as an error so callers can print it as is, or take it apart with
// errors.As to annotate lines.
type Errors []Error

// Error lists one problem per line.
func (es Errors) Error() string {
	switch len(es) {
	case 0:
		return "no errors"
	case 1:
		return es[0].Error()
	}
	var b strings.Builder
	b.WriteString(strconv.Itoa(len(es)))
	b.WriteString(" problems in ")
	if es[0].File != "" {
		b.WriteString(es[0].File)
	} else {
		b.WriteString("config")
	}
	b.WriteString(":")
	for _, e := range es {
		b.WriteString("\n")
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap exposes each problem so errors.As can find an individual Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Sorted orders problems by position, keeping discovery order among
// problems on the same spot (stable), and drops exact duplicates, which arise
// when the schema walk and the decoder both notice the same thing.
func (es Errors) Sorted() Errors {
	slices.SortStableFunc(es, func(a, b Error) int {
		// Position-less errors go last: they are about the file as a whole.
		la, lb := a.Line, b.Line
		if la == 0 {
			la = int(^uint(0) >> 1)
		}
		if lb == 0 {
			lb = int(^uint(0) >> 1)
		}
		return cmp.Or(cmp.Compare(la, lb), cmp.Compare(a.Column, b.Column))
	})
	return slices.CompactFunc(es, func(a, b Error) bool {
		return a.Line == b.Line && a.Key == b.Key && a.Msg == b.Msg
	})
}
