package flows

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// A client that starts one aqlguard per server (what `aqlguard init`
// writes: Claude Desktop, Cursor, VS Code launch each entry as a process
// of their own) reads a file through one process and sends through
// another: neither session sees both. The processes of one client share
// a Board: a file in the state directory, one per principal and client
// process, to which each appends what its sessions read that counts
// (never a secret: what was read, in words, and when), and which each
// reads before it judges a call. A mark of another process counts as
// the session's own; the human's "forget" clears the board for every
// process of the client.

// Board is the marks the aqlguard processes of one client share.
type Board struct {
	path string
	self string // this process's name on its lines
	// Failed, when set, hears of a mark that could not be written: the
	// other processes then ask less than they should, which must be said.
	Failed func(error)

	mu     sync.Mutex
	offset int64       // how far the file has been read
	tail   []byte      // a line not yet whole
	marks  []boardMark // other processes' marks since the last clear
	mine   map[string]bool
	// cleared says another process's clear was read and not yet
	// reported (Others).
	cleared bool
}

// boardMark is one line of a board.
type boardMark struct {
	Kind    string    `json:"kind"` // "private", "untrusted", "clear"
	What    string    `json:"what,omitempty"`
	At      time.Time `json:"at"`
	Process string    `json:"process"`
}

// maxBoardBytes bounds a board: past it nothing more is written (its
// marks stand until a clear, which starts a new file).
const maxBoardBytes = 1 << 20

// OpenBoard opens (creating) the board of principal's client, the
// process client, in dir (the state directory's flows/). self names this
// process on the lines it writes.
func OpenBoard(dir, principal, client, self string) (*Board, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("flows board: %w", err)
	}
	name := safeName(principal) + "." + safeName(client) + ".jsonl"
	b := &Board{path: filepath.Join(dir, name), self: self, mine: map[string]bool{}}
	forgetStale(dir, b.path)
	f, err := os.OpenFile(b.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("flows board: %w", err)
	}
	return b, f.Close()
}

// staleAfter is how long a board nobody wrote to is kept: its client
// has most likely ended (a client keeps its servers while it runs).
const staleAfter = 24 * time.Hour

// forgetStale removes the boards of dir nobody wrote to for staleAfter,
// but keep.
func forgetStale(dir, keep string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if p == keep || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleAfter {
			_ = os.Remove(p)
		}
	}
}

// Path is the board's file.
func (b *Board) Path() string { return b.path }

// safeName keeps letters, digits, '-' and '_' of s.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// publish appends a mark of this process.
func (b *Board) publish(kind, what string, at time.Time) error {
	line, err := json.Marshal(boardMark{Kind: kind, What: what, At: at, Process: b.self})
	if err != nil {
		return err
	}
	line = append(line, '\n')
	f, err := os.OpenFile(b.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("flows board: %w", err)
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size()+int64(len(line)) > maxBoardBytes && kind != "clear" {
		return nil // full: what it holds stands until the next clear
	}
	// One write of a line under 4 KiB to a file opened O_APPEND lands
	// whole, after every other process's.
	if _, err := f.Write(line); err != nil {
		return fmt.Errorf("flows board: %w", err)
	}
	return nil
}

// Publish tells the other processes what this one's session read.
func (b *Board) Publish(private bool, what string, at time.Time) error {
	kind := "untrusted"
	if private {
		kind = "private"
	}
	b.mu.Lock()
	key := kind + "\x00" + what
	if b.mine[key] {
		b.mu.Unlock()
		return nil
	}
	b.mine[key] = true
	b.mu.Unlock()
	err := b.publish(kind, what, at)
	if err != nil && b.Failed != nil {
		b.Failed(err)
	}
	return err
}

// Clear says the human cleared the client's sessions.
func (b *Board) Clear(at time.Time) error {
	b.mu.Lock()
	b.mine = map[string]bool{}
	b.marks = nil
	b.mu.Unlock()
	return b.publish("clear", "", at)
}

// Marks are what the other processes of the client read.
type Marks struct {
	Private, Untrusted []string
	// Cleared says another process's human cleared the client's
	// sessions since the last Others: this process clears its own.
	Cleared bool
}

// Others reads the board's new lines and returns what the other
// processes' sessions read since the last clear. An error says the
// board could not be read (the caller counts that as untrusted content:
// what another process read is unknown).
func (b *Board) Others() (Marks, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.readNew(); err != nil {
		return Marks{}, err
	}
	out := Marks{Cleared: b.cleared}
	b.cleared = false
	for _, m := range b.marks {
		what := m.What + " (through another aqlguard of this client"
		if !m.At.IsZero() {
			what += ", at " + m.At.Local().Format("15:04")
		}
		what += ")"
		if m.Kind == "private" {
			out.Private = append(out.Private, what)
		} else {
			out.Untrusted = append(out.Untrusted, what)
		}
	}
	return out, nil
}

// readNew reads what was appended since the last read; b.mu.
func (b *Board) readNew() error {
	if info, err := os.Stat(b.path); err == nil && info.Size() == b.offset {
		return nil // nothing new: one system call a judged call
	}
	f, err := os.Open(b.path)
	if err != nil {
		return fmt.Errorf("flows board: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("flows board: %w", err)
	}
	if info.Size() < b.offset {
		// Replaced (a cleanup): read it again from its start.
		b.offset, b.tail, b.marks = 0, nil, nil
	}
	if info.Size() == b.offset {
		return nil
	}
	if _, err := f.Seek(b.offset, io.SeekStart); err != nil {
		return fmt.Errorf("flows board: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxBoardBytes))
	if err != nil {
		return fmt.Errorf("flows board: %w", err)
	}
	b.offset += int64(len(data))
	data = append(b.tail, data...)
	last := bytes.LastIndexByte(data, '\n')
	b.tail = append([]byte(nil), data[last+1:]...)
	sc := bufio.NewScanner(bytes.NewReader(data[:last+1]))
	sc.Buffer(make([]byte, 0, 4096), maxBoardBytes)
	for sc.Scan() {
		var m boardMark
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			// What it meant is unknown: untrusted, until a clear.
			m = boardMark{Kind: "untrusted", What: "a line of the client's flows board that is not a mark (" + b.path + ")"}
		}
		switch {
		case m.Kind == "clear":
			b.marks = nil
			if m.Process != b.self {
				b.cleared = true
				b.mine = map[string]bool{} // what this process read is to be said again
			}
		case m.Process == b.self:
		case m.Kind == "private" || m.Kind == "untrusted":
			if !slices.ContainsFunc(b.marks, func(x boardMark) bool { return x.Kind == m.Kind && x.What == m.What && x.Process == m.Process }) {
				b.marks = append(b.marks, m)
			}
		}
	}
	return nil
}
