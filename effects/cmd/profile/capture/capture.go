// Package capture is what the shipped profiles are made from: a server's
// tools/list as the server sent it, with where it came from, and the
// client that asks a stdio server for it. The profile generator
// (effects/cmd/profile) writes captures; the profiles' tests read them
// and ask the live npm servers again.
package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/aqlguard/aqlguard/effects"
)

// Capture is one server's tools/list as the server sent it, and where it
// came from. The Python servers' captures have Source and Commit instead
// of Command.
type Capture struct {
	Name     string `json:"name"`
	Package  string `json:"package"`
	Version  string `json:"version"`
	MadeFrom string `json:"made_from"`
	// Command is the command line run (paths inside the npm prefix
	// written from node_modules/ on).
	Command []string `json:"command,omitempty"`
	// Runtime is what ran the server (its Node version), or what ran its
	// source (Python and pydantic versions).
	Runtime string `json:"runtime,omitempty"`
	// Source and Commit: the file the definitions were read from, and
	// the repository and commit it is in.
	Source string `json:"source,omitempty"`
	Commit string `json:"commit,omitempty"`
	Date   string `json:"date"`
	// Protocol is the revision initialize asked for (and the one the
	// server answered, if another).
	Protocol string `json:"protocol,omitempty"`
	// Capabilities are the client capabilities initialize declared.
	Capabilities json.RawMessage `json:"capabilities,omitempty"`
	ServerInfo   json.RawMessage `json:"server_info,omitempty"`
	// Tools are the tools as sent, every page in order.
	Tools []json.RawMessage `json:"tools"`
	// Vary, when set, says the server writes something of the machine
	// it runs on into its definitions (the time server, the name of the
	// local time zone): the definitions it sends are Tools as captured
	// and Tools with every Text replaced by one of Values.
	Vary *Vary `json:"vary,omitempty"`
}

// Vary is a text of a capture's definitions that differs from machine to
// machine, and every value it can take.
type Vary struct {
	Text   string   `json:"text"`
	Values []string `json:"values"`
}

// Read reads a capture file.
func Read(path string) (*Capture, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Capture
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

// Variants are the capture's tools under every value of Vary (the tools
// as captured first), each variant in the capture's order.
func (c *Capture) Variants() [][]json.RawMessage {
	out := [][]json.RawMessage{c.Tools}
	if c.Vary == nil {
		return out
	}
	for _, v := range c.Vary.Values {
		tools := make([]json.RawMessage, len(c.Tools))
		for i, t := range c.Tools {
			tools[i] = bytes.ReplaceAll(t, []byte(c.Vary.Text), []byte(v))
		}
		out = append(out, tools)
	}
	return out
}

// MatchKeys are the MatchKeys of the capture's tools by name, in the
// order of Variants, each key once.
func (c *Capture) MatchKeys() (map[string][]string, error) {
	keys := map[string][]string{}
	for n, tools := range c.Variants() {
		seen := map[string]bool{}
		for i, raw := range tools {
			d, err := DefinitionOf(raw)
			if err != nil {
				return nil, fmt.Errorf("capture tool %d: %w", i, err)
			}
			if seen[d.Name] {
				return nil, fmt.Errorf("capture lists tool %s twice", d.Name)
			}
			seen[d.Name] = true
			if _, ok := keys[d.Name]; !ok && n > 0 {
				return nil, fmt.Errorf("tool %s is not in the capture as listed", d.Name)
			}
			if k := effects.MatchKey(d); !slices.Contains(keys[d.Name], k) {
				keys[d.Name] = append(keys[d.Name], k)
			}
		}
	}
	return keys, nil
}

// DefinitionOf reads one tool as a server sends it in tools/list.
func DefinitionOf(raw json.RawMessage) (effects.Definition, error) {
	var t struct {
		Name        string         `json:"name"`
		Title       string         `json:"title"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"inputSchema"`
		Annotations struct {
			ReadOnly    *bool `json:"readOnlyHint"`
			Destructive *bool `json:"destructiveHint"`
			OpenWorld   *bool `json:"openWorldHint"`
		} `json:"annotations"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return effects.Definition{}, err
	}
	if t.Name == "" {
		return effects.Definition{}, errors.New("a tool without a name")
	}
	return effects.Definition{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
		ReadOnly: t.Annotations.ReadOnly, Destructive: t.Annotations.Destructive, OpenWorld: t.Annotations.OpenWorld}, nil
}
