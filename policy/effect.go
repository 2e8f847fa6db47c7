package policy

import (
	"fmt"
	"strings"
)

// Effect is one thing a tool can do to the world outside itself. A tool
// is judged by its effects (what it does) and by the role of each of its
// arguments (what each value is to it), never by its name alone.
type Effect uint8

const (
	// EffectRead reads data of this machine or of the server's own store.
	EffectRead Effect = 1 << iota
	// EffectWrite creates or changes files or the server's data.
	EffectWrite
	// EffectDelete removes files or data.
	EffectDelete
	// EffectExecute runs a command or code.
	EffectExecute
	// EffectSend sends data out of the machine (a request to a URL, a
	// message, an issue on a remote service).
	EffectSend
	// EffectUnknown says nothing tells what the tool does: it is judged
	// as one that could do anything.
	EffectUnknown
	effectEnd
)

// Effects is a set of effects. The empty set is a tool that does nothing
// outside itself (it computes, echoes, or tells the time).
type Effects uint8

var effectNames = []struct {
	e    Effect
	name string
}{
	{EffectRead, "read"}, {EffectWrite, "write"}, {EffectDelete, "delete"},
	{EffectExecute, "execute"}, {EffectSend, "send"}, {EffectUnknown, "unknown"},
}

func (e Effect) String() string {
	for _, n := range effectNames {
		if n.e == e {
			return n.name
		}
	}
	return fmt.Sprintf("effect(%d)", uint8(e))
}

// EffectNames lists the effects' names as a config writes them, "none"
// first.
func EffectNames() []string {
	out := []string{"none"}
	for _, n := range effectNames {
		out = append(out, n.name)
	}
	return out
}

// Has reports whether e is in the set.
func (s Effects) Has(e Effect) bool { return uint8(s)&uint8(e) != 0 }

// With is the set with e added.
func (s Effects) With(e Effect) Effects { return Effects(uint8(s) | uint8(e)) }

// Union is both sets.
func (s Effects) Union(o Effects) Effects { return s | o }

// None reports whether the set is empty: the tool does nothing outside
// itself.
func (s Effects) None() bool { return s == 0 }

// List is the set's effects, in the order of EffectNames.
func (s Effects) List() []Effect {
	var out []Effect
	for _, n := range effectNames {
		if s.Has(n.e) {
			out = append(out, n.e)
		}
	}
	return out
}

// String is the set as a config writes it: "none", "read", "read, send".
func (s Effects) String() string {
	if s == 0 {
		return "none"
	}
	var names []string
	for _, e := range s.List() {
		names = append(names, e.String())
	}
	return strings.Join(names, ", ")
}

// ParseEffects reads a set of effects as a config writes it: "none", or
// effect names separated by commas ("read, send").
func ParseEffects(text string) (Effects, error) {
	text = strings.TrimSpace(text)
	if text == "none" {
		return 0, nil
	}
	var s Effects
	for _, part := range strings.Split(text, ",") {
		part = strings.TrimSpace(part)
		found := false
		for _, n := range effectNames {
			if n.name == part {
				s, found = s.With(n.e), true
			}
		}
		if !found {
			return 0, fmt.Errorf("%q is not an effect; use none or one or more of %s, separated by commas",
				part, oneOf(EffectNames()[1:]))
		}
	}
	return s, nil
}

// EffectSource says where a tool's effects come from, in the order the
// guard believes them: the configuration, a shipped profile of a
// well-known server whose definitions match, the tool's own schema and
// description, and, last, a guess from the verb of its name.
type EffectSource uint8

const (
	// SourceNone: no model (a reported step, a policy test case); the
	// evaluator falls back to the call's category.
	SourceNone EffectSource = iota
	SourceConfig
	SourceProfile
	SourceSchema
	SourceGuess
	// SourceUnknown: nothing tells; the effects are EffectUnknown.
	SourceUnknown
)

var sourceNames = [...]string{"", "config", "profile", "schema", "guess", "unknown"}

func (s EffectSource) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return fmt.Sprintf("source(%d)", uint8(s))
}
