package policy

import (
	"strings"
	"testing"
)

// TestAddToSandbox: the grant verb's edit, in each shape an entry has,
// keeps every other line (comments too) and lands in the right entry.
func TestAddToSandbox(t *testing.T) {
	const head = "# my config\nagent = \"me\"\n\n"
	tests := []struct {
		name, in, server, key string
		value                 any
		want                  string // the whole output
		err                   string
	}{
		{name: "no sandbox table: one at the end of the entry, before the next",
			in:     head + "[[servers]]\nname = \"fs\" # the files\ncommand = \"npx\"\n[servers.effects]\nread_file = \"read\"\n\n[[servers]]\nname = \"b\"\ncommand = \"b\"\n",
			server: "fs", key: "write", value: "/home/a/notes",
			want: head + "[[servers]]\nname = \"fs\" # the files\ncommand = \"npx\"\n[servers.effects]\nread_file = \"read\"\n\n[servers.sandbox]\nwrite = [\"/home/a/notes\"]\n\n[[servers]]\nname = \"b\"\ncommand = \"b\"\n"},
		{name: "the last entry, at the end of the file",
			in:     head + "[[servers]]\nname = \"fs\"\ncommand = \"npx\"",
			server: "fs", key: "read", value: "~/.config/x",
			want: head + "[[servers]]\nname = \"fs\"\ncommand = \"npx\"\n\n[servers.sandbox]\nread = [\"~/.config/x\"]\n"},
		{name: "a table without the key: the key after its header",
			in:     head + "[[servers]]\nname = \"fs\"\ncommand = \"npx\"\n[servers.sandbox] # mine\nmode = \"auto\"\n",
			server: "fs", key: "connect", value: 5432,
			want: head + "[[servers]]\nname = \"fs\"\ncommand = \"npx\"\n[servers.sandbox] # mine\nconnect = [5432]\nmode = \"auto\"\n"},
		{name: "a list: one more in it, its comment kept",
			in:     head + "[[servers]]\nname = \"fs\"\ncommand = \"npx\"\n[servers.sandbox]\nwrite = [\"/a\"] # why\n",
			server: "fs", key: "write", value: "/b \"c\"",
			want: head + "[[servers]]\nname = \"fs\"\ncommand = \"npx\"\n[servers.sandbox]\nwrite = [\"/a\", \"/b \\\"c\\\"\"] # why\n"},
		{name: "an empty list",
			in:     head + "[[servers]]\nname = \"fs\"\ncommand = \"npx\"\n[servers.sandbox]\nwrite = [ ]\n",
			server: "fs", key: "write", value: "/b",
			want: head + "[[servers]]\nname = \"fs\"\ncommand = \"npx\"\n[servers.sandbox]\nwrite = [ \"/b\"]\n"},
		{name: "inline: by hand",
			in:     head + "[[servers]]\nname = \"fs\"\ncommand = \"npx\"\nsandbox = { mode = \"auto\" }\n",
			server: "fs", key: "write", value: "/b", err: `add write = ["/b"] to the [servers.sandbox] of the server fs by hand`},
		{name: "no such server",
			in:     head + "[[servers]]\nname = \"fs\"\ncommand = \"npx\"\n",
			server: "gh", key: "write", value: "/b", err: `no [[servers]] entry is named "gh"`},
		{name: "a relative path does not make a valid config",
			in:     head + "[[servers]]\nname = \"fs\"\ncommand = \"npx\"\n",
			server: "fs", key: "write", value: "rel", err: "not an absolute path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := AddToSandbox([]byte(tc.in), tc.server, tc.key, tc.value)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", out, tc.want)
			}
		})
	}
}

// FuzzAddToSandbox: whatever the file, the edit either fails or leaves a
// configuration that parses and holds the value.
func FuzzAddToSandbox(f *testing.F) {
	f.Add([]byte("[[servers]]\nname = \"fs\"\ncommand = \"x\"\n"), "/a")
	f.Add([]byte("[[servers]]\nname = \"fs\"\ncommand = \"x\"\n[servers.sandbox]\nwrite = [\"/b\",]\n"), "/a")
	f.Add([]byte("[[servers]]\nname='fs'\ncommand=\"x\"\n[servers.sandbox]\nwrite=[\n# c\n\"/b\"\n]\n[verify]\n"), "/a")
	f.Fuzz(func(t *testing.T, data []byte, path string) {
		out, err := AddToSandbox(data, "fs", "write", path)
		if err != nil {
			return
		}
		if _, err := Parse(out, "fuzz"); err != nil {
			t.Fatalf("the edit left an invalid config: %v\n%s", err, out)
		}
	})
}
