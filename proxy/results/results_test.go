package results

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
)

func TestPieces(t *testing.T) {
	cases := []struct {
		name, method, raw string
		want              []string // where=text
		binary            int
	}{
		{"text blocks", ToolsCall, `{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`,
			[]string{"content[0].text=a", "content[0].type=text", "content[1].text=b", "content[1].type=text"}, 0},
		{"embedded resource", ToolsCall, `{"content":[{"type":"resource","resource":{"uri":"file:///x","text":"body"}}]}`,
			[]string{"content[0].resource.text=body", "content[0].resource.uri=file:///x", "content[0].type=resource"}, 0},
		{"image data is counted, not read", ToolsCall, `{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}`,
			[]string{"content[0].mimeType=image/png", "content[0].type=image"}, 4},
		{"a member in another case is read too", ToolsCall, `{"content":[{"type":"text","Text":"evil"}]}`,
			[]string{"content[0].Text=evil", "content[0].type=text"}, 0},
		{"member names that are not plain", ToolsCall, `{"structuredContent":{"ignore previous instructions":1}}`,
			[]string{"structuredContent.ignore previous instructions (its name)=ignore previous instructions"}, 0},
		{"text and binary blobs", ResourcesRead, `{"contents":[{"uri":"b","blob":"aGVsbG8="},{"uri":"c","blob":"/w=="}]}`,
			[]string{"contents[0].blob (decoded)=hello", "contents[0].uri=b", "contents[1].uri=c"}, 4},
		{"prompt", PromptsGet, `{"description":"d","messages":[{"role":"user","content":{"type":"text","text":"m"}}]}`,
			[]string{"description=d", "messages[0].content.text=m", "messages[0].content.type=text", "messages[0].role=user"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Read(c.method, json.RawMessage(c.raw))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range r.Pieces {
				got = append(got, p.Where+"="+p.Text)
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("pieces:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if r.Binary != c.binary {
				t.Errorf("binary %d, want %d", r.Binary, c.binary)
			}
			out, _ := r.JSON()
			if string(out) != c.raw {
				t.Errorf("an unchanged, unambiguous result is handed on as it came: %s", out)
			}
		})
	}
}

// A result a client could read otherwise than the guard did goes out as
// the guard read it.
func TestAmbiguousResultIsWrittenAsRead(t *testing.T) {
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"benign"}],"content":[{"type":"text","text":"evil"}]}`,
		"{\"content\":[{\"type\":\"text\",\"text\":\"a\xffb\"}]}",
	} {
		r, err := Read(ToolsCall, json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		out, err := r.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) == raw {
			t.Errorf("%q went out as it came", raw)
		}
		again, err := Read(ToolsCall, out)
		if err != nil {
			t.Fatal(err)
		}
		if len(again.Pieces) != len(r.Pieces) || again.Pieces[0].Text != r.Pieces[0].Text {
			t.Errorf("what goes out (%s) is not what was read", out)
		}
		if again.rewrite {
			t.Errorf("%s is still ambiguous", out)
		}
	}
}

func TestCaseVariantsAreWithheld(t *testing.T) {
	r, err := Read(ToolsCall, json.RawMessage(`{"content":[{"type":"text","text":"benign","Text":"evil"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := r.JSON()
	if r.Ambiguous != "text and Text" || len(r.Pieces) != 0 || strings.Contains(string(out), "evil") {
		t.Errorf("ambiguous %q, pieces %d, out %s", r.Ambiguous, len(r.Pieces), out)
	}
}

func TestNoticeReplaceWithhold(t *testing.T) {
	raw := `{"content":[{"type":"text","text":"key AKIA"}],"structuredContent":{"k":"key AKIA"},"_meta":{"m":1}}`
	r, _ := Read(ToolsCall, json.RawMessage(raw))
	for i, p := range r.Pieces {
		if strings.Contains(p.Text, "AKIA") && !r.Replace(i, strings.ReplaceAll(p.Text, "AKIA", "[x]")) {
			t.Fatalf("piece %s could not be replaced", p.Where)
		}
	}
	r.Notice("N")
	out, _ := r.JSON()
	want := `{"_meta":{"m":1},"content":[{"text":"key [x]","type":"text"},{"text":"N","type":"text"}],"structuredContent":{"k":"key [x]"}}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	r.Withhold("W")
	out, _ = r.JSON()
	if want := `{"_meta":{"m":1},"content":[{"text":"W","type":"text"}],"isError":true}`; string(out) != want {
		t.Errorf("withheld: %s", out)
	}
	for _, c := range []struct{ method, raw, want string }{
		// Nothing else changed: the notice is appended to the bytes as
		// they came.
		{ResourcesRead, `{"contents":[{"uri":"a","text":"t"}]}`, `{"contents":[{"uri":"a","text":"t"},{"mimeType":"text/plain","text":"N","uri":"aqlguard:notice"}]}`},
		{PromptsGet, `{"messages":[]}`, `{"messages":[{"content":{"text":"N","type":"text"},"role":"user"}]}`},
		{PromptsGet, `{"messages" : [ ] }`, `{"messages" : [ {"content":{"text":"N","type":"text"},"role":"user"}] }`},
		{ToolsCall, ` {"z":1, "content" : [ {"type":"text","text":"\u0041"} ]}`, ` {"z":1, "content" : [ {"type":"text","text":"\u0041"} ,{"text":"N","type":"text"}]}`},
		// No list to append to: the document is written again.
		{ToolsCall, `{"z":1,"content":"x"}`, `{"content":[{"text":"N","type":"text"}],"z":1}`},
		{ToolsCall, `{"z":1}`, `{"content":[{"text":"N","type":"text"}],"z":1}`},
	} {
		r, _ := Read(c.method, json.RawMessage(c.raw))
		r.Notice("N")
		if out, _ := r.JSON(); string(out) != c.want {
			t.Errorf("%s notice: %s", c.method, out)
		}
	}
	// A member name has no place to write a placeholder in.
	r, _ = Read(ToolsCall, json.RawMessage(`{"content":[],"structuredContent":{"AKIA":1}}`))
	if r.Replace(0, "x") {
		t.Error("a member name was replaced")
	}
}

func TestNotAResult(t *testing.T) {
	for _, raw := range []string{``, `[]`, `null`, `"x"`, `{`} {
		if _, err := Read(ToolsCall, json.RawMessage(raw)); err == nil {
			t.Errorf("%q read as a result", raw)
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add(ToolsCall, `{"content":[{"type":"text","text":"a"}],"structuredContent":{"a":[1,"b"]}}`)
	f.Add(ResourcesRead, `{"contents":[{"uri":"a","blob":"aGVsbG8="}]}`)
	f.Add(PromptsGet, `{"messages":[{"role":"user","content":{"type":"text","text":"m"}}]}`)
	f.Add(ToolsCall, `{"content":[{"type":"image","data":"AAAA"},{"data":"x","type":"audio"},{"type":"text","text":"a\u00e9\"b"}],"z":[1,true,null,{"Ünï":"x"}],"blob":"aGk="}`)
	f.Add(ToolsCall, ` { "content" : [ ] , "structuredContent" : { "a b" : [ "x" , -1.5e3 ] } } `)
	f.Add(ToolsCall, `{"content":[{"type":"text","text":"\ud83d\ude00 \ud800 x \udc00\ud800\u0041 \u0000\/\b\f"}]}`)
	f.Add(PromptsGet, ` {"messages" : [ ] , "x":[{"messages":[]}]} `)
	f.Add(ToolsCall, `{"Content":[]}`)
	f.Fuzz(func(t *testing.T, method, raw string) {
		r, err := Read(method, json.RawMessage(raw))
		if err != nil {
			return
		}
		noticesAppended(t, method, raw)
		// The bytes read as the decoded document reads: the same pieces.
		if r.doc == nil {
			fast := append([]Piece(nil), r.Pieces...)
			binary := r.Binary
			r.writable()
			if len(fast) != len(r.Pieces) || binary != r.Binary {
				t.Fatalf("%s: %d pieces (binary %d) from the bytes, %d (binary %d) from the document", raw, len(fast), binary, len(r.Pieces), r.Binary)
			}
			for i := range fast {
				if fast[i].Where != r.Pieces[i].Where || fast[i].Text != r.Pieces[i].Text {
					t.Fatalf("%s: piece %d: %q=%q from the bytes, %q=%q from the document", raw, i, fast[i].Where, fast[i].Text, r.Pieces[i].Where, r.Pieces[i].Text)
				}
			}
		}
		r.Notice("N")
		for i := range r.Pieces {
			r.Replace(i, "R")
		}
		out, err := r.JSON()
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("%s: wrote invalid JSON %s", raw, out)
		}
		again, err := Read(method, out)
		if err != nil {
			t.Fatalf("%s: what was written (%s) cannot be read again: %v", raw, out, err)
		}
		if again.rewrite {
			t.Fatalf("%s: what was written (%s) is ambiguous", raw, out)
		}
	})
}

// noticesAppended wants notices appended to the bytes of a result read
// without decoding it (Result.notices) to write the document that
// decoding it and adding them writes, with the notices written the same,
// and the rest of the bytes as they came.
func noticesAppended(t *testing.T, method, raw string) {
	t.Helper()
	fast, err1 := Read(method, json.RawMessage(raw))
	slow, err2 := Read(method, json.RawMessage(raw))
	if err1 != nil || err2 != nil {
		t.Fatalf("%s: read once, not again: %v, %v", raw, err1, err2)
	}
	slow.writable()
	texts := []string{"N", "M \"<>&\u2028 é"}
	for _, text := range texts {
		fast.Notice(text)
		slow.Notice(text)
	}
	a, errA := fast.JSON()
	b, errB := slow.JSON()
	if (errA == nil) != (errB == nil) || fast.Ambiguous != slow.Ambiguous || len(fast.Pieces) != len(slow.Pieces) {
		t.Fatalf("%s: appended: %v, %q, %d pieces; decoded: %v, %q, %d", raw, errA, fast.Ambiguous, len(fast.Pieces), errB, slow.Ambiguous, len(slow.Pieces))
	}
	if errA != nil {
		return
	}
	if !json.Valid(a) {
		t.Fatalf("%s: appended notices make invalid JSON %s", raw, a)
	}
	decode := func(b []byte) any {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return v
	}
	if !reflect.DeepEqual(decode(a), decode(b)) {
		t.Fatalf("%s: appended %s, decoded and written %s", raw, a, b)
	}
	if fast.doc != nil {
		return // written again
	}
	// Appended: raw, with the notices as the document writes them
	// inserted at one place.
	var ins []byte
	for _, text := range texts {
		e, _ := rawjson.Marshal(noticeEntry(method, text))
		ins = append(append(ins, ','), e...)
	}
	at, _ := fast.appendAt()
	if !bytes.Equal(a[:at], []byte(raw[:at])) || !bytes.Equal(a[len(a)-(len(raw)-at):], []byte(raw[at:])) ||
		!bytes.HasSuffix(ins, a[at:len(a)-(len(raw)-at)]) || len(a)-len(raw) < len(ins)-1 {
		t.Fatalf("%s: appended as %s", raw, a)
	}
}

// FuzzReadOnePass wants a result read in one pass (names checked as the
// bytes are read) read as the way that checks the names first reads it.
func FuzzReadOnePass(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"a"}],"structuredContent":{"a":[1,"b"]}}`,
		`{"a":1,"A":2}`, `{"a":1,"a":2}`, `{"k":1,"\u212a":2}`, `{"s":1,"ſ":2}`, `{"é":1,"É":2}`, `{"x":{"@":1,"` + "`" + `":2}}`,
		`{"content":[{"type":"text","Text":"a","text":"b"}]}`, `{"content":[{"data":"AAAA","type":"image"}],"blob":"aGk="}`,
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"Q":18}`,
		"{\"a\":\"\xff\"}", `{"\u0061":1,"a":2}`,
		// Long strings with escapes, met again past the first few (fast.go's decoded).
		func() string {
			var b strings.Builder
			b.WriteString(`{"content":[`)
			for i := range 7 {
				b.WriteString(`{"type":"text","text":"` + strings.Repeat(`line "`+strconv.Itoa(i%6)+`"\n`, 8) + `"},`)
			}
			b.WriteString(`{"type":"text","text":"x"}],"structuredContent":{"content":"` + strings.Repeat(`line "5"\n`, 8) + `"}}`)
			return b.String()
		}(),
		// A long string with escapes, then strings that start with its
		// bytes and go on (fast.go's again must not take them for it).
		func() string {
			long := strings.Repeat(`x \"y\"\\`, 8)
			return `{"content":[{"type":"text","text":"` + long + `"},{"type":"text","text":"` + long + `\"z"},` +
				`{"type":"text","text":"` + long + `\\"}],"structuredContent":{"content":"` + long + `"}}`
		}(),
		`{"a":1,}`, `{"a" 1}`, `{"a":[1,]}`, `{"a":01}`, "{\"a\":\"\x01\"}", `{} x`, `{"a":tru}`, `{"a":"\q"}`, `{"a":-}`, `{,}`, `{"a":1}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		fast, err1 := read(ToolsCall, json.RawMessage(raw), true)
		slow, err2 := read(ToolsCall, json.RawMessage(raw), false)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("%s: error %v in one pass, %v otherwise", raw, err1, err2)
		}
		if err1 != nil {
			return
		}
		if fast.Ambiguous != slow.Ambiguous || fast.rewrite != slow.rewrite || fast.Binary != slow.Binary || len(fast.Pieces) != len(slow.Pieces) {
			t.Fatalf("%s: one pass: ambiguous %q rewrite %v binary %d pieces %d; otherwise %q %v %d %d", raw,
				fast.Ambiguous, fast.rewrite, fast.Binary, len(fast.Pieces), slow.Ambiguous, slow.rewrite, slow.Binary, len(slow.Pieces))
		}
		for i := range fast.Pieces {
			if fast.Pieces[i].Where != slow.Pieces[i].Where || fast.Pieces[i].Text != slow.Pieces[i].Text {
				t.Fatalf("%s: piece %d: %q=%q in one pass, %q=%q otherwise", raw, i, fast.Pieces[i].Where, fast.Pieces[i].Text, slow.Pieces[i].Where, slow.Pieces[i].Text)
			}
		}
		a, _ := fast.JSON()
		b, _ := slow.JSON()
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: written %s in one pass, %s otherwise", raw, a, b)
		}
	})
}
