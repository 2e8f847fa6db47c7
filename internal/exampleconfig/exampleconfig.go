// Package exampleconfig reads config.example.toml as the tests need it:
// as shipped (every setting its default, so that copying it changes
// nothing a user did not choose) and with its examples turned on (each
// line that starts with '#' and no space is a setting: the file's own
// example of a user's choice, such as alice's state directory, servers
// and rules), which the tests load so that the examples cannot rot.
package exampleconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
)

// Path is config.example.toml's path in this source tree.
func Path() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "config.example.toml")
}

// Read returns config.example.toml as shipped.
func Read() ([]byte, error) { return os.ReadFile(Path()) }

// WithExamples returns config.example.toml with its examples turned on.
func WithExamples() ([]byte, error) {
	data, err := Read()
	if err != nil {
		return nil, err
	}
	return Uncomment(data), nil
}

// Uncomment turns on the settings of a config written as
// config.example.toml is: a line that starts with '#' and then neither
// a space nor '#' loses its '#', and so does every line of an array it
// opens ("#deny = [") up to the line that closes it ("#]"), comments in
// the array included. Prose ("# ...") stays as it is.
func Uncomment(data []byte) []byte {
	lines := bytes.SplitAfter(data, []byte("\n"))
	inArray := false
	for i, l := range lines {
		if len(l) < 2 || l[0] != '#' {
			continue
		}
		setting := l[1] != ' ' && l[1] != '#' && l[1] != '\n' && l[1] != '-'
		if !setting && !inArray {
			continue
		}
		lines[i] = l[1:]
		body := bytes.TrimSpace(l[1:])
		switch {
		case inArray && bytes.Equal(body, []byte("]")):
			inArray = false
		case !inArray && bytes.HasSuffix(body, []byte("[")):
			inArray = true
		}
	}
	return bytes.Join(lines, nil)
}
