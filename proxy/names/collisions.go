package names

import (
	"fmt"
	"slices"
	"strings"
)

// Kind is what a name names: a tool or a prompt.
type Kind string

const (
	Tool   Kind = "tool"
	Prompt Kind = "prompt"
)

// Listing is what one server offers a client: the names of its tools
// and prompts, as the server listed them.
type Listing struct {
	Server  string
	Tools   []string
	Prompts []string
}

// Offer is one server's name in a collision.
type Offer struct {
	Server string
	Name   string
}

// Collision is a name, or names that look alike, that several servers
// offer one client: the model reading them may call one for the other,
// and a server that names a tool as another server's does (tool
// shadowing, name squatting) waits for the model to mistake it.
type Collision struct {
	Kind Kind
	// Offers are the servers and what each names, by server and name.
	Offers []Offer
}

// Lookalike reports whether the names differ (they only look alike).
func (c Collision) Lookalike() bool {
	for _, o := range c.Offers[1:] {
		if o.Name != c.Offers[0].Name {
			return true
		}
	}
	return false
}

// Servers are the servers of the collision, in order.
func (c Collision) Servers() []string {
	var out []string
	for _, o := range c.Offers {
		if !slices.Contains(out, o.Server) {
			out = append(out, o.Server)
		}
	}
	return out
}

// Key names the collision, the same for the same one wherever it is
// found (to report each once).
func (c Collision) Key() string {
	var b strings.Builder
	b.WriteString(string(c.Kind))
	for _, o := range c.Offers {
		b.WriteString("\x00" + o.Server + "\x00" + o.Name)
	}
	return b.String()
}

func (c Collision) String() string {
	if !c.Lookalike() {
		return fmt.Sprintf("%s %q is offered by servers %s", c.Kind, c.Offers[0].Name, strings.Join(c.Servers(), " and "))
	}
	var parts []string
	for _, o := range c.Offers {
		parts = append(parts, fmt.Sprintf("%q (%s)", o.Name, o.Server))
	}
	return fmt.Sprintf("%s names %s look alike", c.Kind, strings.Join(parts, " and "))
}

// Collisions are the tool and prompt names that two or more of the
// servers offer, exactly or as lookalikes (the same skeleton: case,
// separators, lookalike letters and digits aside: read_file, readFile,
// read_fiIe), by kind, then name. A server naming one thing twice, or
// two lookalike things, collides with nobody.
func Collisions(listings []Listing) []Collision {
	var out []Collision
	for _, kind := range []Kind{Tool, Prompt} {
		groups := map[string][]Offer{}
		var keys []string
		for _, l := range listings {
			list := l.Tools
			if kind == Prompt {
				list = l.Prompts
			}
			for _, name := range list {
				k := skeleton(name)
				if k == "" {
					k = name // nothing of it is a letter or a digit: only itself looks like it
				}
				o := Offer{Server: l.Server, Name: name}
				if _, ok := groups[k]; !ok {
					keys = append(keys, k)
				}
				if !slices.Contains(groups[k], o) {
					groups[k] = append(groups[k], o)
				}
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			c := Collision{Kind: kind, Offers: groups[k]}
			if len(c.Servers()) < 2 {
				continue
			}
			slices.SortFunc(c.Offers, func(a, b Offer) int {
				return strings.Compare(a.Server+"\x00"+a.Name, b.Server+"\x00"+b.Name)
			})
			out = append(out, c)
		}
	}
	return out
}
