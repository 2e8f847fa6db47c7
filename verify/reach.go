package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/internal/atomicfile"
)

// What a client's aqlguard could reach of the human. `aqlguard doctor`
// runs in the user's shell, where DISPLAY is set; the aqlguard a client
// starts may have been given none. So each aqlguard records, per agent,
// where its dialogs could go (or why nowhere) when it starts and again
// whenever that changes, in <state_dir>/reach/AGENT.json, and doctor
// reports what the last start of each client's aqlguard could reach,
// beside what its own shell can.

// Reach is what one aqlguard could reach of the human, as last found.
type Reach struct {
	// Agent is the principal the aqlguard answers for (init names it
	// after the client: --agent claude-code).
	Agent string `json:"agent"`
	// StartedBy is the process that started aqlguard, as "node (pid
	// 4242)": the client.
	StartedBy string `json:"started_by,omitempty"`
	// PID is the aqlguard's own process.
	PID int `json:"pid"`
	// At is when this was found.
	At time.Time `json:"at"`
	// Channel is the configured channel ("dialog", "command").
	Channel string `json:"channel"`
	// Reached says a dialog could be put up; Where and From say where,
	// Problem why not.
	Reached bool   `json:"reached"`
	Where   string `json:"where,omitempty"`
	From    string `json:"from,omitempty"`
	Problem string `json:"problem,omitempty"`
}

// Same reports whether r and o found the same (not when, nor by whom).
func (r Reach) Same(o Reach) bool {
	return r.Agent == o.Agent && r.Channel == o.Channel && r.Reached == o.Reached && r.Where == o.Where &&
		r.From == o.From && r.Problem == o.Problem
}

// ReachOf is what a dialog channel's check found (Display's and
// ready's result).
func ReachOf(d Display, err error) Reach {
	r := Reach{Channel: "dialog", Reached: err == nil, From: d.From}
	if len(d.Vars) > 0 {
		r.Where = d.Where()
	}
	if err != nil {
		r.Problem = err.Error()
	}
	return r
}

// ReachDir is where reaches are kept in a state directory.
func ReachDir(stateDir string) string { return filepath.Join(stateDir, "reach") }

var plainAgent = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// reachFile is the agent's file: its name when that is a plain file
// name, else a digest of it.
func reachFile(dir, agent string) string {
	if plainAgent.MatchString(agent) {
		return filepath.Join(dir, agent+".json")
	}
	sum := sha256.Sum256([]byte(agent))
	return filepath.Join(dir, "agent-"+hex.EncodeToString(sum[:8])+".json")
}

// WriteReach records r in dir (created 0700), replacing the agent's
// last record whole.
func WriteReach(dir string, r Reach) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("recording what the human channel reached: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(reachFile(dir, r.Agent), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("recording what the human channel reached: %w", err)
	}
	return nil
}

// ReadReaches reads every agent's last record in dir, newest first;
// none (and no error) when dir does not exist. A file that does not
// read is an error naming it, after the ones that do.
func ReadReaches(dir string) ([]Reach, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Reach
	var errs []error
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		var r Reach
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Join(dir, e.Name()), err))
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.After(out[j].At) })
	return out, errors.Join(errs...)
}
