package flows

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/secrets"
)

// A client that starts one aqlguard per server (what `aqlguard init`
// writes: Claude Desktop, Cursor, VS Code launch each entry as a process
// of their own) reads a file through one process and sends through
// another: neither session sees both. The processes of one client share
// a Board: a file in the state directory, one per principal and client
// process, to which each appends what its sessions read that counts,
// and which each reads before it judges a call. A mark of another
// process counts as the session's own; the human's "forget" clears the
// board for every process of the client.
//
// What a line holds: what was read, in words, and when ("private",
// "untrusted"); and for a secret found in a result, its keyed
// fingerprints ("secret": secrets.PrintKey), so that another process
// refuses it going out as the reading one does. Never a secret, nor a
// digest of one that can be tested without the client's key: the key is
// 32 random bytes in a file beside the board (<board>.key, mode 0600),
// made by the client's first process and read by the others. Whoever
// can read it can read the board and test guesses of a secret against
// its fingerprints: what reading the user's files already allows.
//
// Failing closed: a line that cannot be read (damaged, made under
// another key), a key that cannot be read, a board that cannot be read,
// and a board that filled up (maxBoardBytes: a "full" line says that
// what a process read past it is not on the board) count as private
// data and untrusted content read by another process, so that a send
// asks, until a "forget" (which starts the board again).

// Board is the marks the aqlguard processes of one client share.
type Board struct {
	path, keyPath string
	self          string // this process's name on its lines
	// Failed, when set, hears of a mark that could not be written: the
	// other processes then ask less than they should, which must be said.
	Failed func(error)

	key    *secrets.PrintKey // nil when keyErr
	keyErr error
	keyID  string // key.KeyID in hex, on each "secret" line

	mu     sync.Mutex
	file   os.FileInfo // the file read so far (a clear replaces it)
	offset int64       // how far it has been read
	tail   []byte      // a line not yet whole
	marks  []boardMark // other processes' marks since the last clear
	// prints are the other processes' secrets since the last clear.
	prints *secrets.PrintSet
	mine   map[string]bool
	// clears counts the other processes' clears read (Marks.Clears).
	clears int
	// fullSaid says this process wrote its "full" line since the last
	// clear.
	fullSaid bool
}

// boardMark is one line of a board.
type boardMark struct {
	Kind    string    `json:"kind"` // "private", "untrusted", "secret", "full", "clear"
	What    string    `json:"what,omitempty"`
	At      time.Time `json:"at"`
	Process string    `json:"process"`
	// A "secret" line's: the rule that found it, the digest its
	// reader's audit named it by (secrets.Digest: keyed with a key that
	// process never wrote), the key its prints were made under
	// (PrintKey.KeyID, hex) and the prints.
	Rule   string       `json:"rule,omitempty"`
	Digest string       `json:"digest,omitempty"`
	Key    string       `json:"key,omitempty"`
	Prints []boardPrint `json:"prints,omitempty"`
}

// boardPrint is a secrets.Print on a line.
type boardPrint struct {
	Enc string `json:"enc"`
	Len int    `json:"len"`
	Tag string `json:"tag"` // 8 hex digits
	MAC string `json:"mac"` // 32 hex digits
}

// maxBoardBytes bounds a board: past it a process writes one "full"
// line, then nothing more, until a clear starts the board again.
const maxBoardBytes = 1 << 20

// maxWhat bounds what a "secret" line says of where it was read.
const maxWhat = 256

// unreadable is a mark that stands for what could not be read.
const unreadable = "unreadable"

// OpenBoard opens (creating) the board of principal's client, the
// process client, in dir (the state directory's flows/), and its key
// (creating it). self names this process on the lines it writes. A key
// that cannot be read or made does not fail OpenBoard: the board then
// says so each time it is read (Others), which asks.
func OpenBoard(dir, principal, client, self string) (*Board, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("flows board: %w", err)
	}
	stem := filepath.Join(dir, safeName(principal)+"."+safeName(client))
	b := &Board{path: stem + ".jsonl", keyPath: stem + ".key", self: self, mine: map[string]bool{}}
	forgetStale(dir, b.path)
	f, err := os.OpenFile(b.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("flows board: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("flows board: %w", err)
	}
	raw, err := boardKey(b.keyPath)
	if err == nil {
		b.key, err = secrets.NewPrintKey(raw)
	}
	if err != nil {
		b.keyErr = fmt.Errorf("flows board key: %w", err)
	} else {
		b.keyID = fmt.Sprintf("%08x", b.key.KeyID())
		b.prints = secrets.NewPrintSet(b.key)
	}
	return b, nil
}

// boardKey reads the key at path, or makes it: written whole to a file
// of its own, then linked to path, so that the client's processes,
// started together, agree on the first that lands.
func boardKey(path string) ([]byte, error) {
	k, err := readBoardKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	k = make([]byte, secrets.PrintKeyLen)
	rand.Read(k) // never fails (crypto/rand, Go 1.24)

	// Mode 0600, as os.CreateTemp makes it.
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".new-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(k); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		return readBoardKey(path) // another process's landed first
	} else if err != nil {
		return nil, err
	}
	return k, nil
}

// readBoardKey reads a key, which only its user may read.
func readBoardKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s may be read by others (mode %v): make it 0600, or remove it with its board", path, info.Mode().Perm())
	}
	k, err := io.ReadAll(io.LimitReader(f, secrets.PrintKeyLen+1))
	if err != nil {
		return nil, err
	}
	if len(k) != secrets.PrintKeyLen {
		return nil, fmt.Errorf("%s is not a key (%d bytes, not %d): remove it with its board", path, len(k), secrets.PrintKeyLen)
	}
	return k, nil
}

// staleAfter is how long a board nobody wrote to is kept: its client
// has most likely ended (a client keeps its servers while it runs).
const staleAfter = 24 * time.Hour

// forgetStale removes the boards of dir nobody wrote to for staleAfter
// (and their keys, and what a process left half made), but keep.
func forgetStale(dir, keep string) {
	entries, _ := os.ReadDir(dir)
	stale := func(name string) bool {
		info, err := os.Stat(filepath.Join(dir, name))
		return err != nil || time.Since(info.ModTime()) > staleAfter
	}
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(dir, name)
		if p == keep || p == strings.TrimSuffix(keep, ".jsonl")+".key" || !stale(name) {
			continue
		}
		switch {
		case strings.HasSuffix(name, ".key"):
			// A key is written once: it is stale with its board.
			if !stale(strings.TrimSuffix(name, ".key") + ".jsonl") {
				continue
			}
		case strings.HasSuffix(name, ".jsonl"), strings.Contains(name, ".new-"):
		default:
			continue
		}
		_ = os.Remove(p)
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

// publish appends a line of this process, or, for a clear, starts the
// board again with it.
func (b *Board) publish(m boardMark) error {
	m.Process = b.self
	line, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("flows board: %w", err)
	}
	line = append(line, '\n')
	if m.Kind == "clear" {
		return b.restart(line)
	}
	for range 3 {
		f, err := os.OpenFile(b.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("flows board: %w", err)
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("flows board: %w", err)
		}
		if info.Size()+int64(len(line)) > maxBoardBytes {
			err := b.full(f, m.At)
			f.Close()
			return err
		}
		// One write of a line under 4 KiB to a file opened O_APPEND lands
		// whole, after every other process's.
		_, err = f.Write(line)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("flows board: %w", err)
		}
		// A clear by another process may have replaced the file between
		// the open and the write, and the line be in the old one: it is
		// written again to the new one (where it counts after the clear:
		// the safe side).
		if now, err := os.Stat(b.path); err == nil && os.SameFile(now, info) {
			return nil
		}
	}
	return fmt.Errorf("flows board: %s was replaced three times while a line was written to it", b.path)
}

// full writes this process's "full" line, once until a clear (a board
// may so pass maxBoardBytes by a short line a process), and returns the
// error that says what is lost.
func (b *Board) full(f *os.File, at time.Time) error {
	b.mu.Lock()
	said := b.fullSaid
	b.fullSaid = true
	b.mu.Unlock()
	if !said {
		line, _ := json.Marshal(boardMark{Kind: "full", At: at, Process: b.self})
		if _, err := f.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("flows board %s is full, and saying so failed: %w", b.path, err)
		}
	}
	return fmt.Errorf("flows board %s is full (%d bytes): what this process reads is no longer shared; "+
		"the client's other processes count it as private data and untrusted content until a forget", b.path, maxBoardBytes)
}

// restart replaces the board by one that holds line (a clear): what it
// held, fingerprints too, is gone from the disk as well.
func (b *Board) restart(line []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(b.path), filepath.Base(b.path)+".new-*") // mode 0600
	if err != nil {
		return fmt.Errorf("flows board: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(line); err != nil {
		tmp.Close()
		return fmt.Errorf("flows board: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("flows board: %w", err)
	}
	if err := os.Rename(tmp.Name(), b.path); err != nil {
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
	return b.publishOnce(kind+"\x00"+what, boardMark{Kind: kind, What: what, At: at})
}

// PublishSecret tells the other processes the fingerprints of a secret
// this one's session saw: text[f.Start:f.End], of a finding of a
// secrets scan of text, in what ("the result of fs.read_file") at at.
// A secret the session would not remember (secrets.Seen.Add) is not
// published.
func (b *Board) PublishSecret(text string, f secrets.Finding, what string, at time.Time) error {
	if b.key == nil {
		if b.Failed != nil {
			b.Failed(b.keyErr)
		}
		return b.keyErr
	}
	prints := b.key.Prints(text, f)
	if len(prints) == 0 {
		return nil
	}
	if len(what) > maxWhat {
		what = what[:maxWhat] + "…"
	}
	m := boardMark{Kind: "secret", What: what, At: at, Rule: f.Rule, Digest: f.Digest, Key: b.keyID}
	for _, p := range prints {
		m.Prints = append(m.Prints, boardPrint{Enc: p.Encoding, Len: p.Len, Tag: fmt.Sprintf("%08x", p.Tag), MAC: hex.EncodeToString(p.MAC[:])})
	}
	return b.publishOnce("secret\x00"+m.Prints[0].MAC, m)
}

// publishOnce publishes m unless this process did under id since the
// last clear.
func (b *Board) publishOnce(id string, m boardMark) error {
	b.mu.Lock()
	if b.mine[id] {
		b.mu.Unlock()
		return nil
	}
	b.mine[id] = true
	b.mu.Unlock()
	err := b.publish(m)
	if err != nil {
		b.mu.Lock()
		delete(b.mine, id) // said again the next time it is read
		b.mu.Unlock()
		if b.Failed != nil {
			b.Failed(err)
		}
	}
	return err
}

// Clear says the human cleared the client's sessions: the board starts
// again with the clear.
func (b *Board) Clear(at time.Time) error {
	b.mu.Lock()
	b.forget()
	b.mu.Unlock()
	return b.publish(boardMark{Kind: "clear", At: at})
}

// forget drops what the board holds of the other processes and what
// this one said; b.mu.
func (b *Board) forget() {
	b.mine = map[string]bool{}
	b.marks = nil
	b.fullSaid = false
	if b.key != nil {
		b.prints = secrets.NewPrintSet(b.key)
	}
}

// Marks are what the other processes of the client read.
type Marks struct {
	Private, Untrusted []string
	// Secrets are the fingerprints of the secrets they saw; nil when
	// none.
	Secrets *secrets.PrintSet
	// Clears counts the clears of the client's sessions by the other
	// processes' humans the board has read: a session that has not seen
	// the last clears its own.
	Clears int
}

// Others reads the board's new lines and returns what the other
// processes' sessions read since the last clear. An error says the
// board (or its key) could not be read: the caller counts that as
// private data and untrusted content, what another process read being
// unknown.
func (b *Board) Others() (Marks, error) {
	if b.keyErr != nil {
		return Marks{}, b.keyErr
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.readNew(); err != nil {
		return Marks{}, err
	}
	out := Marks{Clears: b.clears}
	if b.prints.Len() > 0 {
		out.Secrets = b.prints
	}
	for _, m := range b.marks {
		var what string
		switch m.Kind {
		case "full":
			what = "what another aqlguard of this client read after their flows board filled (" + b.path + sayAt(m.At) + "; a forget empties it)"
		case unreadable:
			what = m.What
		default:
			what = m.What + " (through another aqlguard of this client" + sayAt(m.At) + ")"
		}
		if m.Kind != "untrusted" {
			out.Private = append(out.Private, what)
		}
		if m.Kind != "private" {
			out.Untrusted = append(out.Untrusted, what)
		}
	}
	return out, nil
}

// sayAt is ", at 17:04", or nothing for a zero time.
func sayAt(at time.Time) string {
	if at.IsZero() {
		return ""
	}
	return ", at " + at.Local().Format("15:04")
}

// readNew reads what was appended since the last read; b.mu.
func (b *Board) readNew() error {
	if info, err := os.Stat(b.path); err == nil && b.file != nil && os.SameFile(info, b.file) && info.Size() == b.offset {
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
	if b.file == nil || !os.SameFile(info, b.file) || info.Size() < b.offset {
		// Another file (a clear started the board again; a cleanup), or
		// one cut short: read it from its start.
		if b.file != nil {
			b.forgetOthers()
		}
		b.file, b.offset, b.tail = info, 0, nil
	}
	if info.Size() == b.offset {
		return nil
	}
	if _, err := f.Seek(b.offset, io.SeekStart); err != nil {
		return fmt.Errorf("flows board: %w", err)
	}
	for {
		data, err := io.ReadAll(io.LimitReader(f, maxBoardBytes))
		if err != nil {
			return fmt.Errorf("flows board: %w", err)
		}
		if len(data) == 0 {
			return nil
		}
		b.offset += int64(len(data))
		b.readLines(data)
	}
}

// readLines reads the lines of data, after what is left of the last;
// b.mu.
func (b *Board) readLines(data []byte) {
	data = append(b.tail, data...)
	last := bytes.LastIndexByte(data, '\n')
	b.tail = append([]byte(nil), data[last+1:]...)
	if len(b.tail) > maxBoardBytes {
		b.tail = nil
		b.add(b.unreadable(errors.New("a line longer than a board")))
	}
	sc := bufio.NewScanner(bytes.NewReader(data[:last+1]))
	sc.Buffer(make([]byte, 0, 4096), 2*maxBoardBytes)
	for sc.Scan() {
		m, prints, err := parseBoardLine(sc.Bytes(), b.keyID)
		if err != nil {
			m = b.unreadable(err)
		}
		switch {
		case m.Kind == "clear":
			b.marks = nil
			if b.key != nil {
				b.prints = secrets.NewPrintSet(b.key)
			}
			if m.Process != b.self {
				b.clears++
				b.mine = map[string]bool{} // what this process read is to be said again
				b.fullSaid = false
			}
		case m.Process == b.self && m.Kind != unreadable:
		case m.Kind == "secret":
			from := m.What
			if !m.At.IsZero() {
				from += " at " + m.At.Local().Format("15:04")
			}
			b.prints.Add(m.Rule, m.Digest, from, prints)
		default:
			b.add(m)
		}
	}
	if err := sc.Err(); err != nil {
		b.add(b.unreadable(err))
	}
}

// unreadable is the mark of a line that cannot be read: what it meant
// is unknown, so it counts as private data and untrusted content until
// a clear.
func (b *Board) unreadable(err error) boardMark {
	return boardMark{Kind: unreadable, What: "a line of the client's flows board that cannot be read (" + b.path + ": " + err.Error() + ")"}
}

// add keeps another process's mark, unless held; b.mu.
func (b *Board) add(m boardMark) {
	if !slices.ContainsFunc(b.marks, func(x boardMark) bool { return x.Kind == m.Kind && x.What == m.What && x.Process == m.Process }) {
		b.marks = append(b.marks, m)
	}
}

// forgetOthers drops what the board said of the other processes, when
// it was replaced; b.mu.
func (b *Board) forgetOthers() {
	b.marks = nil
	if b.key != nil {
		b.prints = secrets.NewPrintSet(b.key)
	}
}

// maxPrints bounds the prints of a line (encodings makes at most 8).
const maxPrints = 16

// parseBoardLine reads one line of a board made under the key keyID:
// its mark, and for a "secret" its prints, checked whole. An error says
// the line cannot be read as what it claims to be.
func parseBoardLine(line []byte, keyID string) (boardMark, []secrets.Print, error) {
	var m boardMark
	if err := json.Unmarshal(line, &m); err != nil {
		return boardMark{}, nil, errors.New("not a mark")
	}
	switch m.Kind {
	case "private", "untrusted", "full", "clear":
		if len(m.Prints) > 0 {
			return boardMark{}, nil, errors.New("prints on a " + m.Kind + " mark")
		}
		return m, nil, nil
	case "secret":
	default:
		return boardMark{}, nil, errors.New("a mark of no known kind")
	}
	if m.Key != keyID {
		return boardMark{}, nil, errors.New("a secret's fingerprints made under another key")
	}
	if len(m.Prints) == 0 || len(m.Prints) > maxPrints || m.Prints[0].Enc != "plain" || m.Rule == "" {
		return boardMark{}, nil, errors.New("a secret's fingerprints, not whole")
	}
	prints := make([]secrets.Print, len(m.Prints))
	for i, p := range m.Prints {
		tag, terr := hex.DecodeString(p.Tag)
		mac, merr := hex.DecodeString(p.MAC)
		if !secrets.ValidEncoding(p.Enc) || p.Len < 8 || p.Len > secrets.MaxPrintLen || terr != nil || len(tag) != 4 ||
			merr != nil || len(mac) != 16 {
			return boardMark{}, nil, errors.New("a fingerprint that is not one (" + strconv.Itoa(i) + ")")
		}
		prints[i] = secrets.Print{Encoding: p.Enc, Len: p.Len, Tag: uint32(tag[0])<<24 | uint32(tag[1])<<16 | uint32(tag[2])<<8 | uint32(tag[3])}
		copy(prints[i].MAC[:], mac)
	}
	return m, prints, nil
}
