//lint:file-ignore U1000 the helpers here serve the scenario tests, which need not use them all

// Harness: configs and the isolated environment aqlguard runs in (see harness_test.go).

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
)

// ---------------------------------------------------------------------------
// Configs

// renderConfig expands config as a text/template (missing keys are errors).
// Data, for use as {{.testserver}} or, quoted for TOML, {{toml .testserver}}:
//
//	aqlguard, testserver, everything  the built binaries (bins.*)
//	dir                               the guard's directory
//
// Functions: toml (a TOML basic string) and tomlArray (an array of them),
// also available as the Go functions tomlString and tomlArray. A config
// without "{{" is returned as it is.
func renderConfig(t *testing.T, config, dir string) string {
	t.Helper()
	if !strings.Contains(config, "{{") {
		return config
	}
	tmpl, err := template.New("config").Option("missingkey=error").
		Funcs(template.FuncMap{"toml": tomlString, "tomlArray": tomlArray}).Parse(config)
	if err != nil {
		t.Fatalf("config template: %v", err)
	}
	var buf bytes.Buffer
	err = tmpl.Execute(&buf, map[string]string{
		"aqlguard": bins.aqlguard, "testserver": bins.testserver, "everything": bins.everything, "dir": dir,
	})
	if err != nil {
		t.Fatalf("config template: %v", err)
	}
	return buf.String()
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	b, _ := json.Marshal(s) // JSON string escapes are a subset of TOML's
	return string(b)
}

// tomlArray renders ss as a TOML array of basic strings: ["a", "b"].
func tomlArray(ss ...string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// isolatedEnv is the test's environment without AQLGUARD_*, DISPLAY and
// WAYLAND_DISPLAY variables and with
// HOME and the XDG base directories inside dir/home.
func isolatedEnv(t *testing.T, dir string) []string {
	t.Helper()
	home := filepath.Join(dir, "home")
	set := map[string]string{
		"HOME":            home,
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_STATE_HOME":  filepath.Join(home, ".local", "state"),
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME":  filepath.Join(home, ".cache"),
	}
	for _, d := range set {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		// No display either: a test that wants dialogs sets DISPLAY itself,
		// and no other test may pop one up on a developer's screen.
		if _, ok := set[k]; !ok && !strings.HasPrefix(k, "AQLGUARD_") && k != "DISPLAY" && k != "WAYLAND_DISPLAY" {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	// Set, and empty: aqlguard then looks for no display of its own
	// either (in the environment of the processes that started it, or
	// this user's sessions: verify.FindDisplay). A test that wants one
	// appends DISPLAY (the last value of a name counts).
	return append(env, "DISPLAY=", "WAYLAND_DISPLAY=")
}
