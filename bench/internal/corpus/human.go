package corpus

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// human is the person aqlguard asks: a command channel program that
// appends every question to a log and answers what the answer file says.
type human struct {
	script, log, answerFile string
}

// humanScript is the command channel: aqlguard writes one JSON object
// and a newline to its stdin and reads the answer from its first line of
// stdout (docs/command-channel.md).
const humanScript = `#!/bin/sh
# $1: the question log, $2: the file holding the answer.
q=$(cat)
printf '%s\n' "$q" >> "$1"
cat "$2"
`

func newHuman(dir string) (*human, error) {
	h := &human{script: filepath.Join(dir, "human.sh"), log: filepath.Join(dir, "questions.jsonl"), answerFile: filepath.Join(dir, "answer")}
	if err := os.WriteFile(h.script, []byte(humanScript), 0o700); err != nil {
		return nil, err
	}
	return h, h.answer("deny")
}

// answer sets what the human answers from now on.
func (h *human) answer(a string) error { return os.WriteFile(h.answerFile, []byte(a+"\n"), 0o600) }

// verifyTOML is the [verify] section that makes this the human channel.
func (h *human) verifyTOML() string {
	return fmt.Sprintf("[verify]\nchannel = \"command\"\ncommand = %s\n", tomlArray([]string{"/bin/sh", h.script, h.log, h.answerFile}))
}

// Question is one question aqlguard put to the human (the fields the
// report uses; a challenge carries a code, which is not kept).
type Question struct {
	Kind      string `json:"kind"`
	Operation string `json:"operation"`
	Action    string `json:"action"`
	Reason    string `json:"reason"`
	Tier      string `json:"tier,omitempty"`
	Server    string `json:"server,omitempty"`
	Tool      string `json:"tool,omitempty"`
}

// questions reads every question asked so far.
func (h *human) questions() []Question {
	b, err := os.ReadFile(h.log)
	if err != nil {
		return nil
	}
	var out []Question
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var q Question
		if json.Unmarshal(sc.Bytes(), &q) == nil {
			out = append(out, q)
		}
	}
	return out
}

func (q Question) String() string {
	s := q.Kind + " " + q.Operation
	if q.Reason != "" {
		s += ": " + q.Reason
	}
	return s
}
