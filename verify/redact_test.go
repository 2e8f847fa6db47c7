package verify

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	const code = "7K3M-0QZ8-ABCD-EFGH-JKMNP-QRST0"
	for _, tt := range []struct{ in, want string }{
		{"code " + code + ".", "code [code]."},
		{"typed 7K3M0QZ8ABCDEFGHJKMNPQRST0!", "typed [code]!"},
		{code + code + "7K3M0QZ8ABCDEFGHJKMNPQRST0", "[code][code][code]"},
		{"7K3M-0QZ8 only a part", "7K3M-0QZ8 only a part"},
		{"", ""},
	} {
		if got := redact(tt.in, code); got != tt.want {
			t.Errorf("redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := redact("no code at all", ""); got != "no code at all" {
		t.Errorf("with no code: %q", got)
	}
}

// Whichever way a program's output is cut into writes, a code is caught,
// in short lines, in a last line without a newline, and in lines longer
// than what the writer holds back; and nothing else changes.
func TestRedactWriter(t *testing.T) {
	const code = "7K3M-0QZ8-ABCD-EFGH-JKMNP-QRST0"
	normalized := NormalizeCode(code)
	long := strings.Repeat("x", maxHeld-10)
	inputs := map[string]string{
		"lines":            "first\nthe code is " + code + "\nand typed " + normalized + "\nlast\n",
		"no final newline": "{\"code\":\"" + code + "\"}",
		"a long line":      long + code + long + normalized + long + "\n" + code,
		"no code":          "nothing to hide\n" + long + long + "\n",
	}
	for name, in := range inputs {
		want := redact(in, code)
		if strings.Contains(want, "7K3M") {
			t.Fatalf("%s: redact missed the code", name)
		}
		// Every cut into two writes, and writes of fixed sizes.
		var splits [][]string
		for i := 0; i <= len(in); i++ {
			splits = append(splits, []string{in[:i], in[i:]})
		}
		for _, size := range []int{1, 3, 31, 4096, 4097, 32 * 1024} {
			var parts []string
			for s := in; s != ""; {
				n := min(size, len(s))
				parts, s = append(parts, s[:n]), s[n:]
			}
			splits = append(splits, parts)
		}
		for _, parts := range splits {
			var out bytes.Buffer
			w := &redactWriter{w: &out, code: code}
			for _, p := range parts {
				if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
				if strings.Contains(out.String(), "7K3M") {
					t.Fatalf("%s: the code was passed on (writes of %d bytes)", name, len(parts[0]))
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if out.String() != want {
				t.Fatalf("%s, writes %q…: got %q, want %q", name, parts[0], out.String(), want)
			}
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestRedactWriterError(t *testing.T) {
	w := &redactWriter{w: failingWriter{}, code: "AAAA-BBBB"}
	if _, err := w.Write([]byte("held back")); err != nil {
		t.Errorf("a part line was written: %v", err)
	}
	if _, err := w.Write([]byte("\n")); err == nil {
		t.Error("the writer's error was lost")
	}
}
