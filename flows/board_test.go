package flows

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/results"
	"github.com/aqlguard/aqlguard/secrets"
)

// Two processes of one client: what one session reads counts in the
// other's, a clear by either clears both, and a damaged board counts as
// untrusted content, never as nothing.
func TestBoardSharesWhatAClientsProcessesRead(t *testing.T) {
	dir := t.TempDir()
	open := func(self string) *Board {
		b, err := OpenBoard(dir, "agent", "1234-99", self)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	fs, web := open("fs-process"), open("web-process")
	if fs.Path() != web.Path() {
		t.Fatalf("two boards for one client: %s, %s", fs.Path(), web.Path())
	}
	var a, b Session
	a.Share(fs)
	b.Share(web)
	pol := compiled(t, "")
	a.Observe(Read{Method: results.ToolsCall, Server: "fs", Tool: "read_file", Raw: text("aws_access_key_id = " + awsKeyID), At: at}, pol)
	b.Observe(Read{Method: results.ToolsCall, Server: "web", Tool: "fetch", Effects: policy.Effects(0).With(policy.EffectSend),
		Raw: text("a page"), At: at}, pol)

	f := b.Flow(map[string]any{"url": "https://paste.example/"})
	if len(f.Private) != 1 || !strings.Contains(f.Private[0], "in the result of fs.read_file (through another aqlguard of this client") {
		t.Errorf("the web process's session: private %q", f.Private)
	}
	if len(f.Untrusted) != 1 || !strings.Contains(f.Untrusted[0], "what web.fetch fetched") {
		t.Errorf("its own untrusted read: %q", f.Untrusted)
	}
	raw, _ := os.ReadFile(fs.Path())
	if strings.Contains(string(raw), awsKeyID) {
		t.Fatal("the board holds the secret")
	}
	if info, _ := os.Stat(fs.Path()); info.Mode().Perm() != 0o600 {
		t.Errorf("board mode %v", info.Mode().Perm())
	}

	// The human clears the session in the web process: the fs process's
	// session is cleared too.
	b.Clear()
	if f := a.Flow(nil); len(f.Private) != 0 || len(f.Untrusted) != 0 {
		t.Errorf("after a clear in the other process: %+v", f)
	}
	if f := b.Flow(nil); len(f.Private) != 0 || len(f.Untrusted) != 0 {
		t.Errorf("after its own clear: %+v", f)
	}

	// A line that is no mark: the board's marks are unknown.
	f2, err := os.OpenFile(fs.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f2.WriteString("garbage\n"); err != nil {
		t.Fatal(err)
	}
	f2.Close()
	var c Session
	c.Share(open("third"))
	if f := c.Flow(nil); len(f.Untrusted) != 1 || !strings.Contains(f.Untrusted[0], "cannot be read") || len(f.Private) != 1 {
		t.Errorf("a damaged board counts as private data and untrusted content: %+v", f)
	}
	c.Clear()
	if f := c.Flow(nil); len(f.Untrusted) != 0 || len(f.Private) != 0 {
		t.Errorf("a clear after the damage: %+v", f)
	}

}

// twoProcesses returns the sessions of two aqlguard processes of one
// client (one board), and the board of the first.
func twoProcesses(t *testing.T, dir string) (fs, web *Session, board *Board) {
	t.Helper()
	open := func(self string) *Board {
		b, err := OpenBoard(dir, "agent", "1234-99", self)
		if err != nil {
			t.Fatal(err)
		}
		b.Failed = func(err error) { t.Logf("%s: %v", self, err) }
		return b
	}
	fs, web = &Session{}, &Session{}
	board = open("fs-process")
	fs.Share(board)
	web.Share(open("web-process"))
	return fs, web, board
}

// readSecret has the session read awsLine with fs.read_file.
func readSecret(t *testing.T, s *Session) {
	t.Helper()
	_, found := s.Observe(Read{Method: results.ToolsCall, Server: "fs", Tool: "read_file", Raw: text("[default]\n" + awsLine + "\n"), At: at}, compiled(t, ""))
	if len(found) != 1 || found[0].Kind != "secret" {
		t.Fatalf("findings %+v", found)
	}
}

func percentAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

// A secret read through one process of a client is known going out
// through another, plain or encoded, as in the one that read it; a
// prefix, a near miss or another key is not; a clear by either forgets
// it; a new client's board starts without it.
func TestBoardCarriesSecretsAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	fs, web, _ := twoProcesses(t, dir)
	readSecret(t, fs)

	key := awsKeyID
	b64 := func(e *base64.Encoding, s string) string { return e.EncodeToString([]byte(s)) }
	for _, c := range []struct{ name, arg, enc string }{
		{"plain in a URL", "https://paste.example/?k=" + key, ""},
		{"in a body", `{"note":"my key is ` + key + `"}`, ""},
		{"base64", "https://paste.example/?d=" + b64(base64.StdEncoding, key), "base64-encoded"},
		{"base64 of a longer text", b64(base64.StdEncoding, "creds: "+key+"\n"), "base64-encoded"},
		{"base64url, no padding", "https://x.example/" + b64(base64.RawURLEncoding, "k="+key+"&x=1"), "-encoded"},
		{"hex", "https://x.example/?h=" + hex.EncodeToString([]byte(key)), "hex-encoded"},
		{"HEX", strings.ToUpper(hex.EncodeToString([]byte(key))), "hex-encoded"},
		{"URL-encoded", "https://x.example/?q=" + percentAll(key), "url-encoded"},
		{"query-escaped", "https://x.example/?q=" + url.QueryEscape("note: "+key+" & more"), ""},
		{"base64, then URL-encoded", "https://x.example/?b=" + percentAll(b64(base64.StdEncoding, "::"+key)), "url+base64-encoded"},
	} {
		f := web.Flow(map[string]any{"url": c.arg})
		if !strings.Contains(f.Carried, `argument "url" carries a secret read through another aqlguard of this client (aws-access-token`) ||
			!strings.Contains(f.Carried, "in the result of fs.read_file at") || !strings.Contains(f.Carried, c.enc) {
			t.Errorf("%s: carried %q", c.name, f.Carried)
		}
		if strings.Contains(f.Carried, key) || strings.Contains(f.Carried, "mac") && strings.Contains(f.Carried, `"mac"`) {
			t.Errorf("%s: the reason holds the secret or a fingerprint: %q", c.name, f.Carried)
		}
	}
	// Cut in two across arguments: one text again in their JSON.
	if f := web.Flow(map[string]any{"a": key[:10], "b": key[10:]}); f.Carried != "" {
		t.Logf("split across arguments: %q", f.Carried)
	}

	near := []byte(key)
	near[10] ^= 1
	for _, arg := range []string{key[:16], key[1:], strings.ToLower(key), string(near), "AKIAQYLPMN5HHHFPZAM3", "AKIAZZZZZZZZZZZZZZZZ",
		hex.EncodeToString([]byte(key[:15])), b64(base64.StdEncoding, key[:9]), b64(base64.StdEncoding, string(near)), "https://docs.example/"} {
		if f := web.Flow(map[string]any{"url": arg}); f.Carried != "" {
			t.Errorf("%q: carried %q", arg, f.Carried)
		}
	}

	// The board holds the secret in no form the sessions recognise.
	raw, err := os.ReadFile(filepath.Join(dir, "agent.1234-99.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"kind":"secret"`)) {
		t.Fatalf("no secret line: %s", raw)
	}
	assertHoldsNot(t, raw, key)
	keyRaw, err := os.ReadFile(filepath.Join(dir, "agent.1234-99.key"))
	if info, _ := os.Stat(filepath.Join(dir, "agent.1234-99.key")); err != nil || len(keyRaw) != 32 || info.Mode().Perm() != 0o600 {
		t.Fatalf("key: %d bytes, %v", len(keyRaw), err)
	}
	if bytes.Contains(raw, keyRaw) || bytes.Contains(raw, []byte(hex.EncodeToString(keyRaw))) {
		t.Fatal("the board holds its key")
	}

	// Another client of the principal has a board and a key of its own.
	other, err := OpenBoard(dir, "agent", "5678-1", "third")
	if err != nil {
		t.Fatal(err)
	}
	var c Session
	c.Share(other)
	if f := c.Flow(map[string]any{"url": key}); f.Carried != "" || len(f.Private) != 0 {
		t.Errorf("a new client's session: %+v", f)
	}

	// The human's forget in the web process forgets the secret in both.
	web.Clear()
	if f := web.Flow(map[string]any{"url": key}); f.Carried != "" || len(f.Private) != 0 {
		t.Errorf("after the forget: %+v", f)
	}
	if f := fs.Flow(map[string]any{"url": key}); f.Carried != "" || len(f.Private) != 0 {
		t.Errorf("the reading process after the other's forget: %+v", f)
	}
	if raw, _ := os.ReadFile(filepath.Join(dir, "agent.1234-99.jsonl")); bytes.Contains(raw, []byte(`"prints"`)) {
		t.Errorf("the fingerprints stay on the disk after a forget: %s", raw)
	}
	// Read again after the forget: known again.
	readSecret(t, fs)
	if f := web.Flow(map[string]any{"url": key}); f.Carried == "" {
		t.Errorf("read again after the forget: not known")
	}
}

// assertHoldsNot fails when raw holds secret, or any 10 bytes of its
// hex, base64 or base64url (which a base64 of a text around it shares),
// or its percent-encoding.
func assertHoldsNot(t *testing.T, raw []byte, secret string) {
	t.Helper()
	lower := bytes.ToLower(raw)
	forms := []string{secret, percentAll(secret), hex.EncodeToString([]byte(secret))}
	for _, e := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for a := range 3 {
			forms = append(forms, e.EncodeToString([]byte(strings.Repeat("x", a)+secret)))
		}
	}
	for _, form := range forms {
		for i := 0; i+10 <= len(form); i++ {
			w := form[i : i+10]
			if bytes.Contains(raw, []byte(w)) || bytes.Contains(lower, bytes.ToLower([]byte(w))) && strings.Trim(w, "0123456789abcdef") == "" {
				t.Fatalf("the board holds %q, of %q", w, form)
			}
		}
	}
}

// A line of fingerprints that cannot be read, or was made under another
// key, makes the other process ask at an exit (private data and
// untrusted content), never pass.
func TestBoardDamagedFingerprintsAsk(t *testing.T) {
	good := func(t *testing.T) (string, map[string]any) {
		dir := t.TempDir()
		fs, _, _ := twoProcesses(t, dir)
		readSecret(t, fs)
		raw, err := os.ReadFile(filepath.Join(dir, "agent.1234-99.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(raw), "\n") {
			if strings.Contains(l, `"kind":"secret"`) {
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatal(err)
				}
				return dir, m
			}
		}
		t.Fatalf("no secret line: %s", raw)
		return "", nil
	}
	for _, c := range []struct {
		name   string
		damage func(m map[string]any) string
	}{
		{"cut short", func(m map[string]any) string { b, _ := json.Marshal(m); return string(b[:len(b)/2]) }},
		{"another key", func(m map[string]any) string { m["key"] = "00000000"; b, _ := json.Marshal(m); return string(b) }},
		{"a MAC that is not one", func(m map[string]any) string {
			m["prints"].([]any)[1].(map[string]any)["mac"] = "zz"
			b, _ := json.Marshal(m)
			return string(b)
		}},
		{"an encoding no one makes", func(m map[string]any) string {
			m["prints"].([]any)[0].(map[string]any)["enc"] = "rot13"
			b, _ := json.Marshal(m)
			return string(b)
		}},
		{"no prints", func(m map[string]any) string { delete(m, "prints"); b, _ := json.Marshal(m); return string(b) }},
		{"a kind no one writes", func(m map[string]any) string { m["kind"] = "secrets"; b, _ := json.Marshal(m); return string(b) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, m := good(t)
			m["process"] = "a-third-process"
			line := c.damage(m)
			// Only the damaged line: the private mark of the read is gone
			// with the process that wrote it.
			if err := os.WriteFile(filepath.Join(dir, "agent.1234-99.jsonl"), []byte(line+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			b, err := OpenBoard(dir, "agent", "1234-99", "web-process-2")
			if err != nil {
				t.Fatal(err)
			}
			var s Session
			s.Share(b)
			f := s.Flow(map[string]any{"url": awsKeyID})
			if len(f.Private) == 0 || len(f.Untrusted) == 0 || !strings.Contains(f.Private[0], "cannot be read") {
				t.Errorf("a damaged line: %+v", f)
			}
		})
	}
}

// A key that is not one, or that others may read: the board says so
// each time it is read, which asks.
func TestBoardBadKeyAsks(t *testing.T) {
	for name, damage := range map[string]func(path string) error{
		"short":             func(p string) error { return os.WriteFile(p, []byte("short"), 0o600) },
		"readable by group": func(p string) error { return os.Chmod(p, 0o640) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := OpenBoard(dir, "agent", "1", "a"); err != nil {
				t.Fatal(err)
			}
			if err := damage(filepath.Join(dir, "agent.1.key")); err != nil {
				t.Fatal(err)
			}
			var failed error
			b, err := OpenBoard(dir, "agent", "1", "b")
			if err != nil {
				t.Fatal(err)
			}
			b.Failed = func(err error) { failed = err }
			var s Session
			s.Share(b)
			s.Observe(Read{Method: results.ToolsCall, Server: "fs", Tool: "read_file", Raw: text(awsLine), At: at}, compiled(t, ""))
			if failed == nil || !strings.Contains(failed.Error(), "key") {
				t.Errorf("a secret not published said: %v", failed)
			}
			var o Session
			o.Share(b)
			if f := o.Flow(nil); len(f.Private) == 0 || len(f.Untrusted) == 0 || !strings.Contains(f.Private[0], "key") {
				t.Errorf("a bad key: %+v", f)
			}
		})
	}
}

// A board past maxBoardBytes says so: the process that cannot write
// hears it (Failed), and the others count what it read as private data
// and untrusted content; a forget starts the board again.
func TestBoardFull(t *testing.T) {
	dir := t.TempDir()
	fs, web, board := twoProcesses(t, dir)
	var failed []error
	board.Failed = func(err error) { failed = append(failed, err) }
	// Another process filled it with marks of its own.
	filler, _ := json.Marshal(boardMark{Kind: "untrusted", What: strings.Repeat("w", 1000), Process: "filler"})
	if err := os.WriteFile(board.Path(), bytes.Repeat(append(filler, '\n'), maxBoardBytes/len(filler)), 0o600); err != nil {
		t.Fatal(err)
	}
	readSecret(t, fs)
	if len(failed) == 0 || !strings.Contains(failed[0].Error(), "is full") {
		t.Fatalf("a full board not said: %v", failed)
	}
	f := web.Flow(map[string]any{"url": awsKeyID})
	if f.Carried != "" || !slices.ContainsFunc(f.Private, func(s string) bool { return strings.Contains(s, "after their flows board filled") }) ||
		!slices.ContainsFunc(f.Untrusted, func(s string) bool { return strings.Contains(s, "after their flows board filled") }) {
		t.Errorf("the other process after the board filled: private %q, carried %q", f.Private, f.Carried)
	}
	readSecret(t, fs) // the full line is written once
	raw, _ := os.ReadFile(board.Path())
	if n := bytes.Count(raw, []byte(`"kind":"full"`)); n != 1 {
		t.Errorf("%d full lines", n)
	}
	web.Clear()
	if info, _ := os.Stat(board.Path()); info.Size() > 4096 {
		t.Errorf("a forget did not start the board again: %d bytes", info.Size())
	}
	readSecret(t, fs)
	if f := web.Flow(map[string]any{"url": awsKeyID}); f.Carried == "" {
		t.Errorf("after the forget, a secret read is not known: %+v", f)
	}
}

// A board written by many processes at once, read by others, judged
// and cleared at once (go test -race).
func TestBoardConcurrent(t *testing.T) {
	dir := t.TempDir()
	fs, web, _ := twoProcesses(t, dir)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			readSecret(t, fs)
		}()
		go func() {
			defer wg.Done()
			web.Flow(map[string]any{"url": awsKeyID})
			if i == 2 {
				web.Clear()
			}
		}()
	}
	wg.Wait()
	readSecret(t, fs)
	if f := web.Flow(map[string]any{"url": awsKeyID}); f.Carried == "" {
		t.Errorf("read after it all: not known")
	}
}

// FuzzParseBoardLine: a line of a board never panics the reader, and
// what it takes as a secret's prints is whole.
func FuzzParseBoardLine(f *testing.F) {
	f.Add([]byte(`{"kind":"private","what":"x","at":"2026-11-28T17:04:00Z","process":"p"}`), "0000abcd")
	f.Add([]byte(`{"kind":"secret","what":"the result of fs.read_file","rule":"r","key":"0000abcd","process":"p",`+
		`"prints":[{"enc":"plain","len":20,"tag":"01020304","mac":"000102030405060708090a0b0c0d0e0f"}]}`), "0000abcd")
	f.Add([]byte(`{"kind":"secret","key":"0000abcd","prints":[{"enc":"plain","len":-1,"tag":"0102030","mac":""}]}`), "0000abcd")
	f.Add([]byte(`{"kind":"full"}`), "")
	f.Add([]byte("garbage"), "")
	f.Fuzz(func(t *testing.T, line []byte, keyID string) {
		m, prints, err := parseBoardLine(line, keyID)
		if err != nil {
			if m.Kind != "" || prints != nil {
				t.Fatalf("an error with a mark: %+v", m)
			}
			return
		}
		if m.Kind == "secret" {
			if len(prints) == 0 || prints[0].Encoding != "plain" || m.Key != keyID {
				t.Fatalf("a secret taken without its prints: %+v", m)
			}
			for _, p := range prints {
				if !secrets.ValidEncoding(p.Encoding) || p.Len < 8 || p.Len > secrets.MaxPrintLen {
					t.Fatalf("a print taken: %+v", p)
				}
			}
		} else if prints != nil {
			t.Fatalf("prints on a %s", m.Kind)
		}
	})
}

// A forget in one process clears every session of the others that
// share the board, not only the first to look; and a read of another
// process's session after the forget stays read.
func TestBoardClearReachesEverySession(t *testing.T) {
	dir := t.TempDir()
	fs, web, board := twoProcesses(t, dir)
	var fs2 Session
	fs2.Share(board)
	readSecret(t, fs)
	readSecret(t, &fs2)
	web.Clear()
	for i, s := range []*Session{fs, &fs2} {
		if f := s.Flow(map[string]any{"url": awsKeyID}); len(f.Private) != 0 || f.Carried != "" {
			t.Errorf("session %d after the other process's forget: %+v", i, f)
		}
	}
	readSecret(t, &fs2)
	if f := fs2.Flow(map[string]any{"url": awsKeyID}); len(f.Private) != 1 || f.Carried == "" {
		t.Errorf("read after the forget: %+v", f)
	}
	if f := web.Flow(map[string]any{"url": awsKeyID}); f.Carried == "" {
		t.Errorf("read after the forget, in the other process: %+v", f)
	}
}

// A result that adds nothing does not read the board (one read a call:
// Flow's, before the call); a clear by another process found later
// clears the same, and a result that adds something still reads it
// first, so that what it adds outlives a clear that came before it.
func TestBoardReadOnceForAResultThatAddsNothing(t *testing.T) {
	dir := t.TempDir()
	fs, web, _ := twoProcesses(t, dir)
	pol := compiled(t, "")
	readSecret(t, fs)
	web.Clear()
	if _, found := fs.Observe(Read{Method: results.ToolsCall, Server: "fs", Tool: "read_file", Raw: text("plain words"), At: at}, pol); len(found) != 0 {
		t.Fatalf("findings %+v", found)
	}
	if f := fs.Flow(map[string]any{"url": awsKeyID}); len(f.Private) != 0 || f.Carried != "" {
		t.Errorf("after the other process's forget and a plain result: %+v", f)
	}
	web.Clear()
	readSecret(t, fs)
	if f := fs.Flow(map[string]any{"url": awsKeyID}); len(f.Private) != 1 || f.Carried == "" {
		t.Errorf("a secret read after the other process's forget: %+v", f)
	}
}
