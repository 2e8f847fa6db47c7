// Package results reads what a server hands back (a tools/call result,
// a resources/read's contents, a prompts/get's messages) as the texts a
// model will read, each with where it is, and writes the result again
// when the guard changes it: a notice beside it, a secret redacted, the
// content withheld.
//
// What is read is what the client gets. A result whose JSON a client's
// decoder could read otherwise than Go's (a member repeated or spelled in
// two cases, invalid UTF-8) is written again from what was read, so the
// texts the guard scanned are the texts the model sees.
package results

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
)

// Methods whose results are read (the guarded ones of the method
// table).
const (
	ToolsCall     = mcpmethod.ToolsCall
	ResourcesRead = mcpmethod.ResourcesRead
	PromptsGet    = mcpmethod.PromptsGet
)

// Piece is one text of a result, where it is ("content[0].text",
// "structuredContent.items[2].body", "contents[0].blob (decoded)").
type Piece struct {
	Where string
	Text  string
	// set writes a new text in its place (Redact).
	set func(string)
}

// Result is a result as read.
type Result struct {
	method string
	doc    map[string]any
	raw    json.RawMessage
	// rewrite says raw must not go out as it is (ambiguous JSON, or a
	// change made).
	rewrite bool
	// notices are those Notice appends to raw's content array where it
	// stands (appendAt), the document left undecoded: what JSON writes
	// is raw with them, not the whole result decoded and written again
	// (a result of a megabyte past the scan budget took tens of ms).
	notices []string
	// Pieces are the result's texts, in the order a reader meets them.
	Pieces []Piece
	// Ambiguous names two members spelled in two cases ("text and
	// Text"): such a result is withheld (NoticeAmbiguous) and has no
	// pieces.
	Ambiguous string
	// Binary counts the bytes of content that is not text (images,
	// audio, blobs that are not UTF-8 text): not read.
	Binary int
}

// ErrNotAResult is a result that is not a JSON object.
var ErrNotAResult = errors.New("the result is not a JSON object")

// Read reads raw, the result of method.
func Read(method string, raw json.RawMessage) (*Result, error) {
	return read(method, raw, true)
}

// read is Read; without onePass, every result takes the way of those
// whose names may be read two ways (the differential tests compare).
func read(method string, raw json.RawMessage, onePass bool) (*Result, error) {
	switch method {
	case ToolsCall, ResourcesRead, PromptsGet:
	default:
		return nil, fmt.Errorf("results: %q is no method whose result is read", method)
	}
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, ErrNotAResult
	}
	r := &Result{method: method, raw: raw}
	// Most results: UTF-8, every member name ASCII and said once. One
	// pass validates and reads them.
	if onePass && utf8.Valid(raw) && r.readRaw(true) {
		return r, nil
	}
	if !valid(raw) {
		return nil, ErrNotAResult
	}
	var amb *rawjson.AmbiguousError
	switch err := rawjson.UnambiguousValid(raw); {
	case errors.As(err, &amb) && amb.Other != amb.Name:
		// "text" and "Text": exact decoders read one, Go's struct
		// decoder may read the other; no writing of it is safe.
		if err := r.decode(); err != nil {
			return nil, err
		}
		r.Ambiguous = amb.Name + " and " + amb.Other
		r.Withhold(NoticeAmbiguous)
		return r, nil
	case err != nil || !utf8.Valid(raw):
		r.rewrite = true // repeated members: every decoder can read the one written
	}
	// Every string is read, whatever member holds it: a client may show
	// a member this version does not know, and a decoder that folds case
	// reads "Text" as "text". Read from the bytes (fast.go) when they can
	// be read only one way; else from the decoded document.
	if !r.rewrite && r.readRaw(false) {
		return r, nil
	}
	if err := r.decode(); err != nil {
		return nil, err
	}
	r.Pieces, r.Binary = nil, 0
	r.walk("", r.doc, nil, 0)
	return r, nil
}

// decode decodes the document (once): what is changed is changed in it.
func (r *Result) decode() error {
	if r.doc != nil {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(r.raw))
	d.UseNumber()
	var doc map[string]any
	if err := d.Decode(&doc); err != nil || doc == nil {
		return ErrNotAResult
	}
	r.doc = doc
	return nil
}

// writable makes the pieces writable: read from the decoded document,
// in the same order, with the place each is written to.
func (r *Result) writable() {
	if r.doc != nil {
		return
	}
	if r.decode() != nil {
		return // valid JSON (Read checked): cannot happen
	}
	r.Pieces, r.Binary = nil, 0
	r.walk("", r.doc, nil, 0)
	// Notices appended to raw go into the document now, in their order.
	pending := r.notices
	r.notices = nil
	for _, text := range pending {
		r.Notice(text)
	}
}

// maxDepth bounds the walk of structured content; what lies deeper is
// one text (its JSON), so nothing is skipped.
const maxDepth = 64

func (r *Result) walk(where string, v any, set func(any), depth int) {
	if depth > maxDepth {
		b, _ := rawjson.Marshal(v)
		r.Pieces = append(r.Pieces, Piece{Where: where, Text: string(b)})
		return
	}
	switch v := v.(type) {
	case string:
		p := Piece{Where: where, Text: v}
		if set != nil {
			p.set = func(t string) { set(t) }
		}
		r.Pieces = append(r.Pieces, p)
	case map[string]any:
		binary := v["type"] == "image" || v["type"] == "audio"
		for _, k := range slices.Sorted(maps.Keys(v)) { // the same order every time
			x := v[k]
			at := join(where, k)
			if !plainName(k) {
				r.Pieces = append(r.Pieces, Piece{Where: at + " (its name)", Text: k})
			}
			if s, ok := x.(string); ok {
				switch {
				case binary && k == "data":
					r.Binary += len(s)
					continue
				case k == "blob":
					r.blob(at, s, v)
					continue
				}
			}
			r.walk(at, x, func(n any) { v[k] = n }, depth+1)
		}
	case []any:
		for i, x := range v {
			r.walk(index(where, i), x, func(n any) { v[i] = n }, depth+1)
		}
	}
}

// blob reads a base64 blob that decodes to UTF-8 text; other bytes
// are counted in Binary.
func (r *Result) blob(where, s string, m map[string]any) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || !utf8.Valid(b) {
		r.Binary += len(s)
		return
	}
	p := Piece{Where: where + " (decoded)", Text: string(b)}
	if m != nil {
		p.set = func(t string) { m["blob"] = base64.StdEncoding.EncodeToString([]byte(t)) }
	}
	r.Pieces = append(r.Pieces, p)
}

// plainName: a member name of letters, digits, '_' and '-' with a
// lower-case letter, at most 32 bytes ("type", "mimeType",
// "structuredContent"): nothing to find in it. An access key's id (all
// capitals and digits) or a token (longer) is read.
func plainName(k string) bool {
	if k == "" {
		return true
	}
	if len(k) > 32 {
		return false
	}
	lower := false
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-':
		default:
			return false
		}
	}
	return lower
}

func join(where, k string) string {
	if where == "" {
		return k
	}
	return where + "." + k
}

func index(key string, i int) string { return key + "[" + strconv.Itoa(i) + "]" }

// Replace writes text in place of the piece at i (a redaction). A
// piece with no place of its own (a member name, a value deeper than
// the walk goes) cannot be replaced: false.
func (r *Result) Replace(i int, text string) bool {
	r.writable()
	p := &r.Pieces[i]
	if p.set == nil {
		return false
	}
	p.set(text)
	p.Text = text
	r.rewrite = true
	return true
}

// Notice puts text beside the result's content, as a reader meets it
// last: a text block after a tool's content, a text entry after a
// resource's contents, a message after a prompt's.
func (r *Result) Notice(text string) {
	if r.doc == nil && !r.rewrite {
		if _, ok := r.appendAt(); ok {
			r.notices = append(r.notices, text)
			return
		}
	}
	r.writable()
	r.rewrite = true
	key := noticeKey[r.method]
	for k := range r.doc {
		if k != key && strings.EqualFold(k, key) {
			// "Content" beside the "content" the notice adds would be
			// read two ways: nothing of it goes out.
			r.Ambiguous = key + " and " + k
			r.Withhold(NoticeAmbiguous)
			return
		}
	}
	list, _ := r.doc[key].([]any)
	r.doc[key] = append(list, noticeEntry(r.method, text))
}

// noticeKey is the member of a method's result a notice is added to.
var noticeKey = map[string]string{ToolsCall: "content", ResourcesRead: "contents", PromptsGet: "messages"}

// noticeEntry is a notice as an element of the method's list.
func noticeEntry(method, text string) map[string]any {
	switch method {
	case ResourcesRead:
		return map[string]any{"uri": NoticeURI, "mimeType": "text/plain", "text": text}
	case PromptsGet:
		return map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": text}}
	}
	return map[string]any{"type": "text", "text": text}
}

// appendAt is where in raw a notice goes when raw goes out as it came
// but for notices: before the closing bracket of the array the
// method's list member holds. false when there is none (no such member,
// or not an array): the document is decoded and written again. Only
// for a result read without rewrite, whose names no decoder reads two
// ways, so no "Content" stands beside "content".
func (r *Result) appendAt() (at int, ok bool) {
	start, end, found := rawjson.ValueSpan(r.raw, noticeKey[r.method])
	if !found || r.raw[start] != '[' {
		return 0, false
	}
	return end - 1, true
}

// withNotices is raw with the notices appended to its list, each
// element written as JSON would write it in the document.
func (r *Result) withNotices() (json.RawMessage, error) {
	at, ok := r.appendAt()
	if !ok {
		return nil, errors.New("writing the result again: its list moved") // cannot happen: raw does not change
	}
	before := bytes.TrimRight(r.raw[:at], " \t\r\n")
	empty := before[len(before)-1] == '['
	out := make([]byte, 0, len(r.raw)+len(r.notices)*256)
	out = append(out, r.raw[:at]...)
	for i, text := range r.notices {
		b, err := rawjson.Marshal(noticeEntry(r.method, text))
		if err != nil {
			return nil, fmt.Errorf("writing the result again: %w", err)
		}
		if i > 0 || !empty {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	return append(out, r.raw[at:]...), nil
}

// NoticeAmbiguous replaces a result whose members are spelled in two
// cases.
const NoticeAmbiguous = "aqlguard: this result was withheld: it names a member twice, in two cases, so that clients could read it differently."

// NoticeURI names the resource contents entry a notice is.
const NoticeURI = "aqlguard:notice"

// Withhold replaces the whole content with text: a tool's result
// becomes an error whose one text is it (a client that validates
// structured content against the tool's output schema does not for an
// error), a resource's contents and a prompt's messages that one text.
func (r *Result) Withhold(text string) {
	r.writable()
	r.rewrite = true
	switch r.method {
	case ToolsCall:
		r.onlyMeta()
		r.doc["content"] = []any{map[string]any{"type": "text", "text": text}}
		r.doc["isError"] = true
	case ResourcesRead:
		r.onlyMeta()
		r.doc["contents"] = []any{map[string]any{"uri": NoticeURI, "mimeType": "text/plain", "text": text}}
	case PromptsGet:
		r.onlyMeta()
		r.doc["messages"] = []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": text}}}
	}
	r.Pieces = nil
}

// JSON is the result to hand on: raw as it came when nothing changed
// and nothing could be read two ways, else written from what was read.
func (r *Result) JSON() (json.RawMessage, error) {
	if !r.rewrite && len(r.notices) > 0 {
		return r.withNotices()
	}
	if !r.rewrite {
		return r.raw, nil
	}
	b, err := rawjson.Marshal(r.doc)
	if err != nil {
		return nil, fmt.Errorf("writing the result again: %w", err)
	}
	return b, nil
}

// onlyMeta drops every member but _meta.
func (r *Result) onlyMeta() {
	for k := range r.doc {
		if k != "_meta" {
			delete(r.doc, k)
		}
	}
}
