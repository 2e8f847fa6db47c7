package names

// Item is one thing a server offers the client under a name: a tool or
// a prompt.
type Item struct {
	Server string
	Name   string
}

// Prefixed is the name an item is shown under when its own is shared:
// <server>__<name>. A configured server's name holds no '_'
// (policy.ValidServerName), so the first "__" always ends it.
func (it Item) Prefixed() string { return it.Server + "__" + it.Name }

// Shown gives each item the name the client sees, by one rule for tools
// and prompts alike: its own name, or Prefixed where two items would
// share one, or where reserved says the name is aqlguard's own. A
// prefixed name can be another item's own (a server offering "fs__read"
// beside two servers' "read"), which is then prefixed too, until no two
// items share a name (but one server naming one thing twice). Each item
// is prefixed at most once, so a list named to chain such collisions
// costs time linear in its length. The result depends only on the items
// (their order aside): the same servers offering the same names always
// give the same names. out[i] is items[i]'s name; reserved may be nil.
func Shown(items []Item, reserved func(string) bool) []string {
	out := make([]string, len(items))
	holders := make(map[string][]int, len(items)) // name → the items shown under it
	var todo []int
	clash := func(name string) { // every holder of name not prefixed yet is to be
		if hs := holders[name]; len(hs) > 1 || reserved != nil && reserved(name) {
			for _, h := range hs {
				if out[h] != items[h].Prefixed() {
					todo = append(todo, h)
				}
			}
		}
	}
	for i, it := range items {
		out[i] = it.Name
		holders[it.Name] = append(holders[it.Name], i)
	}
	for name := range holders {
		clash(name)
	}
	for len(todo) > 0 {
		i := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		name := items[i].Prefixed()
		if out[i] == name {
			continue // queued twice
		}
		out[i] = name
		holders[name] = append(holders[name], i)
		clash(name)
	}
	return out
}
