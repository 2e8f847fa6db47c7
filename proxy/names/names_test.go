package names

import (
	"slices"
	"testing"
)

func TestShown(t *testing.T) {
	reserved := func(n string) bool { return n == "verify" }
	tests := []struct {
		name  string
		items []Item
		want  []string
	}{
		{"none", nil, []string{}},
		{"no clash", []Item{{"a", "x"}, {"b", "y"}}, []string{"x", "y"}},
		{"both sides of a clash", []Item{{"a", "x"}, {"b", "x"}, {"b", "y"}}, []string{"a__x", "b__x", "y"}},
		{"reserved", []Item{{"a", "verify"}}, []string{"a__verify"}},
		{"a prefixed name that is another's own", []Item{{"a", "x"}, {"b", "x"}, {"c", "a__x"}}, []string{"a__x", "b__x", "c__a__x"}},
		{"order does not matter", []Item{{"c", "a__x"}, {"b", "x"}, {"a", "x"}}, []string{"c__a__x", "b__x", "a__x"}},
		{"one server naming one thing twice", []Item{{"a", "x"}, {"a", "x"}}, []string{"a__x", "a__x"}},
	}
	for _, tt := range tests {
		got := Shown(tt.items, reserved)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestImitates is the rule for server names, case by case: what passes
// for another name and what is only another name.
func TestImitates(t *testing.T) {
	tests := []struct {
		a, b string
		want string // "" for no imitation
	}{
		// One name, written two ways.
		{"github", "github", ""},
		{"GitHub", "git-hub", ""},
		{"ｇｉｔｈｕｂ", "github", ""},
		// Lookalike letters of other scripts, accents.
		{"github", "gіthub", HowLookalike}, // Cyrillic і
		{"github", "githuƅ", HowLookalike},
		{"slack", "slаck", HowLookalike}, // Cyrillic а
		{"fetch", "fétch", HowLookalike},
		{"postgres", "pοstgres", HowLookalike}, // Greek ο
		// Affixes: two servers that answer to one name.
		{"github", "githubmcp", HowAffix},
		{"github", "mcp-github", HowAffix},
		{"git", "mcp-server-git", HowAffix},
		{"github", "@modelcontextprotocol/server-github", HowAffix},
		{"filesystem", "filesystem-server", HowAffix},
		// A digit or a lookalike letter for a letter.
		{"filesystem", "fi1esystem", HowSkeleton},
		{"filesystem", "fiIesystem", HowSkeleton}, // a capital I for the l
		{"github", "g1thub", HowSkeleton},
		{"memory", "rnemory", HowSkeleton},
		{"postgres", "p0stgres", HowSkeleton},
		{"time", "t1me", HowSkeleton},
		{"git", "gi7", HowSkeleton},
		{"slack", "s1ack", HowSkeleton},
		{"github", "g1thub-mcp", HowSkeleton},
		// Numbered servers of one kind.
		{"postgres", "postgres2", ""},
		{"postgres1", "postgres2", ""},
		{"sqlite", "sqlite3", ""},
		{"db1", "db2", ""},
		// One letter added, dropped or swapped.
		{"github", "githb", HowOneEdit},
		{"github", "gihtub", HowOneEdit},
		{"github", "githubb", HowOneEdit},
		{"filesystem", "filesytem", HowOneEdit},
		{"puppeteer", "puppeter", HowOneEdit},
		{"playwright", "plawyright", HowOneEdit},
		// Other names.
		{"git", "github", ""},
		{"git", "gitlab", ""},
		{"github", "gitlab", ""},
		{"notion", "motion", ""}, // a letter replaced by one that does not look like it
		{"slack", "stack", ""},
		{"time", "tim", ""}, // too short for one edit to mean a typo
		{"git", "gif", ""},
		{"fetch", "fetcher", ""},
		{"memory", "memo", ""},
		{"postgres", "postgis", ""},
		{"sqlite", "sequentialthinking", ""},
		{"fs", "fs2", ""},
		{"mcp", "server", ""},
	}
	for _, tt := range tests {
		for _, pair := range [][2]string{{tt.a, tt.b}, {tt.b, tt.a}} {
			how, ok := Imitates(pair[0], pair[1])
			if ok != (tt.want != "") || how != tt.want && ok {
				t.Errorf("Imitates(%q, %q) = %q %v, want %q", pair[0], pair[1], how, ok, tt.want)
			}
		}
	}
}

// TestImitationsOfWellKnown: a server passes for a well-known one as it
// would for a configured one, but for affixes: github-mcp is how people
// name the github server.
func TestImitationsOfWellKnown(t *testing.T) {
	tests := []struct {
		servers []string
		want    []string
	}{
		{[]string{"github", "filesystem", "git", "memory", "time"}, nil},
		{[]string{"githubmcp", "mcpserverfilesystem", "postgres2", "sqlite3"}, nil},
		{[]string{"myproject", "tools", "jira", "motion"}, nil},
		{[]string{"githb"}, []string{`server name "githb" passes for the well-known server "github" (` + HowOneEdit + `)`}},
		{[]string{"fi1esystem"}, []string{`server name "fi1esystem" passes for the well-known server "filesystem" (` + HowSkeleton + `)`}},
		{[]string{"gіthub-mcp"}, []string{`server name "gіthub-mcp" passes for the well-known server "github" (` + HowLookalike + `)`}},
		// A well-known name that is configured is compared as a server:
		// the pair is reported once.
		{[]string{"github", "githb"}, []string{`server names "github" and "githb" pass for each other (` + HowOneEdit + `)`}},
		{[]string{"github", "githubmcp"}, []string{`server names "github" and "githubmcp" pass for each other (` + HowAffix + `)`}},
		{[]string{"git", "github", "gitlab", "postgres", "postgres2"}, nil},
		// One name from two places is one server.
		{[]string{"github", "GitHub"}, nil},
	}
	for _, tt := range tests {
		var got []string
		for _, im := range Imitations(tt.servers) {
			got = append(got, im.String())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Imitations(%q):\n got %q\nwant %q", tt.servers, got, tt.want)
		}
	}
}

func TestCollisions(t *testing.T) {
	tests := []struct {
		name     string
		listings []Listing
		want     []string
	}{
		{"none", []Listing{{Server: "fs", Tools: []string{"read_file"}}, {Server: "git", Tools: []string{"git_log"}}}, nil},
		{"a tool", []Listing{{Server: "fs", Tools: []string{"read_file", "write_file"}}, {Server: "evil", Tools: []string{"read_file"}}},
			[]string{`tool "read_file" is offered by servers evil and fs`}},
		{"a prompt", []Listing{{Server: "a", Prompts: []string{"greet"}}, {Server: "b", Prompts: []string{"greet"}, Tools: []string{"greet"}}},
			[]string{`prompt "greet" is offered by servers a and b`}},
		{"a tool and a prompt of one name do not collide", []Listing{{Server: "a", Tools: []string{"x"}}, {Server: "b", Prompts: []string{"x"}}}, nil},
		{"lookalikes", []Listing{{Server: "fs", Tools: []string{"read_file"}}, {Server: "evil", Tools: []string{"readFile", "read_fi1e"}}},
			[]string{`tool names "readFile" (evil) and "read_fi1e" (evil) and "read_file" (fs) look alike`}},
		{"three servers", []Listing{{Server: "c", Tools: []string{"x"}}, {Server: "a", Tools: []string{"x"}}, {Server: "b", Tools: []string{"x"}}},
			[]string{`tool "x" is offered by servers a and b and c`}},
		{"one server twice", []Listing{{Server: "a", Tools: []string{"x", "x", "X"}}}, nil},
		{"not letters", []Listing{{Server: "a", Tools: []string{"__"}}, {Server: "b", Tools: []string{"--"}}}, nil},
	}
	for _, tt := range tests {
		var got []string
		for _, c := range Collisions(tt.listings) {
			got = append(got, c.String())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// FuzzImitates: the comparison is symmetric, never says a name passes
// for itself, and does not panic on any input (names come from client
// configs and servers).
func FuzzImitates(f *testing.F) {
	for _, s := range [][2]string{{"github", "githb"}, {"fi1esystem", "filesystem"}, {"gіthub", "github"}, {"", "\xff"}, {"mcp", "mcpmcp"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		how1, ok1 := Imitates(a, b)
		how2, ok2 := Imitates(b, a)
		if ok1 != ok2 || how1 != how2 {
			t.Fatalf("Imitates(%q, %q) = %q %v; the other way %q %v", a, b, how1, ok1, how2, ok2)
		}
		if _, ok := Imitates(a, a); ok {
			t.Fatalf("%q passes for itself", a)
		}
		Collisions([]Listing{{Server: "a", Tools: []string{a}}, {Server: "b", Tools: []string{b}}})
	})
}
