package verify

import (
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// A question's first line says what will happen, in the words of what
// the call does (the guard's effect model: Request.Effects, Places,
// Roots) rather than of the tool's category: writing a new file is
// "create the new file …", not "run …"; a write outside the server's
// folder says so ("overwrite … outside the folder you gave the
// filesystem server"); a request out of the machine names where it goes
// ("send … to example.com"). What runs (a command, code, a query) is
// said first, whatever else the tool does. The tool's own name only
// picks among words for the same effect ("change" for an edit,
// "overwrite" for a write of a file that is there); it never makes an
// effect.

// effectWhat is what the call does, in its effects' words, ending in
// "."; "" when the request has no effect model (what says it then).
func effectWhat(r Request) string {
	if r.Effects == nil {
		return ""
	}
	has := func(e string) bool {
		for _, x := range r.Effects {
			if x == e {
				return true
			}
		}
		return false
	}
	server := "the " + visible(r.Server, false) + " server"
	tool := visible(r.Tool, false)
	args := ordered(r.Arguments, r.Roles)
	for _, a := range args {
		s, isString := a.value.(string)
		switch {
		case a.role == roleCommand && isString:
			return "run " + commandPhrase(strings.TrimSpace(s), r.Commands) + " with " + server + "."
		case a.role == roleCode:
			return "run code (" + visible(a.name, false) + ") with " + server + "."
		case a.role == roleQuery:
			return "run a database query with " + server + "."
		}
	}
	where := " with " + server
	if outside := outsideWords(r); outside != "" {
		where = outside
	}
	switch {
	case has("send"):
		return sendWords(r, args, server)
	case has("delete") && len(r.Places) > 0:
		return "delete " + placesWords(r.Places, nounOf(r.Tool)) + where + "."
	case has("write") && len(r.Places) > 0:
		return writeWords(r) + where + "."
	case has("read") && len(r.Places) > 0:
		return "read " + placesWords(r.Places, nounOf(r.Tool)) + where + "."
	case has("read"):
		if u := firstURL(args); u != "" {
			return "fetch " + quoted(u) + where + "."
		}
		return "read data with " + server + " (" + tool + ")."
	case has("delete"):
		return "delete something with " + server + " (" + tool + ")."
	case has("write"):
		return "change what " + server + " keeps (" + tool + ")."
	case has("execute"):
		return "run something with " + server + " (" + tool + ")."
	case has("none"):
		return "use " + tool + ", which does nothing outside itself, with " + server + "."
	}
	return "use " + tool + " with " + server + ", and nothing tells what it does."
}

// sendWords says where a call that sends data out of this machine
// sends it: to the host of its URL, with what it sends when it carries
// content.
func sendWords(r Request, args []argument, server string) string {
	u := firstURL(args)
	if u == "" {
		return "send data out of this machine with " + server + " (" + visible(r.Tool, false) + ")."
	}
	host := "the address"
	if parsed, err := url.Parse(u); err == nil && parsed.Hostname() != "" {
		host = visible(parsed.Hostname(), false)
	}
	for _, a := range args {
		if s, ok := a.value.(string); ok && r.Roles[a.name] == "content" {
			return fmt.Sprintf("send %s (%d characters) to %s with %s.", quoted(s), utf8.RuneCountInString(s), host, server)
		}
	}
	return "send a request for " + quoted(u) + " to " + host + " with " + server + "."
}

// firstURL is the first argument in the url role that is a string.
func firstURL(args []argument) string {
	for _, a := range args {
		if s, ok := a.value.(string); ok && a.role == roleURL {
			return s
		}
	}
	return ""
}

// quoted is text from the model, made visible, cut and quoted (a quote
// in it escaped): it must not read as aqlguard's own words.
func quoted(s string) string {
	c, more := capRunes(visible(s, false), 60)
	if more > 0 {
		c += "…"
	}
	return `"` + strings.ReplaceAll(c, `"`, `\"`) + `"`
}

// writeWords says what a write does to its places: creates a new one,
// overwrites or changes one that is there, moves one to another.
func writeWords(r Request) string {
	noun := nounOf(r.Tool)
	if noun == "path" {
		noun = "file"
	}
	name := strings.ToLower(r.Tool)
	if len(r.Places) == 2 && containsAny(name, "move", "rename") {
		from, to := r.Places[0], r.Places[1]
		if isDestination(from.Arg) {
			from, to = to, from
		}
		return "move " + placeWords(from) + " to " + placeWords(to)
	}
	if len(r.Places) > 1 {
		return "write " + placesWords(r.Places, noun)
	}
	p := r.Places[0]
	switch {
	case !p.Looked:
		return "write " + placeWords(p)
	case !p.Exists:
		return "create the new " + noun + " " + placeWords(p)
	case containsAny(name, "edit", "update", "modify", "patch", "replace", "append", "insert"):
		return "change " + placeWords(p)
	}
	return "overwrite " + placeWords(p)
}

func containsAny(s string, words ...string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// isDestination says an argument names where something goes.
func isDestination(arg string) bool {
	switch strings.ToLower(arg) {
	case "destination", "dest", "dst", "to", "target", "new_path", "newpath":
		return true
	}
	return false
}

// placeWords is one place, quoted, home as ~, with where its links
// lead when that is elsewhere.
func placeWords(p Place) string {
	s := quoted(home(p.Path))
	if p.Target != "" {
		s += " (a link to " + quoted(home(p.Target)) + ")"
	}
	return s
}

// placesWords is one place (placeWords), or "3 files in ~/project".
func placesWords(ps []Place, noun string) string {
	if len(ps) == 1 {
		return placeWords(ps[0])
	}
	var raw []string
	for _, p := range ps {
		raw = append(raw, p.Path)
	}
	return pathsPhrase(raw, noun)
}

// outsideWords says that the call acts outside the folders the server
// was given, naming them ("" when it does not, or none are known).
func outsideWords(r Request) string {
	if len(r.Roots) == 0 {
		return ""
	}
	out := false
	for _, p := range r.Places {
		out = out || p.Outside
	}
	if !out {
		return ""
	}
	var roots []string
	for i, root := range r.Roots {
		if i == 3 {
			roots = append(roots, fmt.Sprintf("and %d more", len(r.Roots)-i))
			break
		}
		c, _ := capRunes(visible(home(root), false), 60)
		roots = append(roots, c)
	}
	folder := "the folder"
	if len(r.Roots) > 1 {
		folder = "the folders"
	}
	return " outside " + folder + " you gave the " + visible(r.Server, false) + " server (" + strings.Join(roots, ", ") + ")"
}
