package verify

import (
	"bytes"
	"io"
	"strings"
)

// redact replaces every occurrence of the code in s, as it is shown and
// as it is typed without hyphens (NormalizeCode), with "[code]".
func redact(s, code string) string {
	if code == "" {
		return s
	}
	s = strings.ReplaceAll(s, code, "[code]")
	if n := NormalizeCode(code); n != "" && n != code {
		s = strings.ReplaceAll(s, n, "[code]")
	}
	return s
}

// maxHeld is how much of an unfinished line redactWriter holds back.
const maxHeld = 4096

// redactWriter passes what a program writes on to w, redacted. A code
// can arrive split across two writes, so it passes on complete lines and
// holds back the rest until the next newline, or until Close; a line
// that grows past maxHeld is passed on in pieces, all but the tail that
// could still begin a code. It is not safe for concurrent use; os/exec
// writes a program's stderr from one goroutine.
type redactWriter struct {
	w    io.Writer
	code string
	held []byte
}

func (r *redactWriter) Write(p []byte) (int, error) {
	r.held = append(r.held, p...)
	n := bytes.LastIndexByte(r.held, '\n') + 1
	if len(r.held)-n > maxHeld {
		r.held = append(r.held[:n], redact(string(r.held[n:]), r.code)...)
		n = len(r.held) - (len(r.code) - 1)
	}
	if err := r.pass(n); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close passes on what is held back. It does not close w.
func (r *redactWriter) Close() error { return r.pass(len(r.held)) }

// pass writes the first n held bytes, redacted, to w. Codes hold no
// newline, so none spans the cut after a complete line; a cut inside a
// long line leaves the tail held back (see Write).
func (r *redactWriter) pass(n int) error {
	if n <= 0 {
		return nil
	}
	out := redact(string(r.held[:n]), r.code)
	r.held = append(r.held[:0], r.held[n:]...)
	_, err := io.WriteString(r.w, out)
	return err
}
