package forward

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aqlguard/aqlguard/store"
)

// FuzzSyslogMessage: whatever a record holds (a model chooses its
// arguments, a server the names), its message is one RFC 5424 message
// whose header fields are printable ASCII without spaces, whose
// structured data ends where it should, and whose MSG is the record's
// line exactly; octet counting frames it whatever bytes it holds.
func FuzzSyslogMessage(f *testing.F) {
	f.Add("decision", "host/12", "allow", `{"command":"rm -rf /"}`, `ab"]\`)
	f.Add("x y\n<13>1 fake", "h o s t/1 2", "block", "\n\n]", "\x00\xff")
	f.Fuzz(func(t *testing.T, kind, process, decision, arg, state string) {
		args, _ := json.Marshal(map[string]string{"a": arg})
		r := store.Record{Seq: 7, Time: time.Unix(1_700_000_000, 0), Kind: kind, Principal: "p", Process: process,
			Decision: decision, Args: args, Prev: store.GenesisHash}
		raw, err := json.Marshal(r)
		if err != nil {
			return
		}
		s := &Syslog{State: state}
		msg := s.message(store.LogEntry{Record: r, Raw: raw})
		bom := bytes.Index(msg, []byte("\xEF\xBB\xBF"))
		if bom < 0 || !bytes.Equal(msg[bom+3:], raw) {
			t.Fatalf("MSG is not the record's line: %q", msg)
		}
		head := msg[:bom]
		sd := bytes.Index(head, []byte(" [aqlguard@32473 "))
		if sd < 0 || !bytes.HasSuffix(head, []byte(`"] `)) {
			t.Fatalf("structured data: %q", head)
		}
		fields := bytes.Split(head[:sd], []byte(" "))
		if len(fields) != 6 {
			t.Fatalf("header has %d fields: %q", len(fields), head[:sd])
		}
		for _, fld := range fields[1:] {
			for _, c := range fld {
				if c < 33 || c > 126 {
					t.Fatalf("header field %q is not PRINTUSASCII", fld)
				}
			}
		}
		// Inside the structured data, every quote is a delimiter or escaped.
		params := head[sd+len(" [aqlguard@32473 ") : len(head)-2]
		for i := 0; i < len(params); i++ {
			if params[i] == '\\' {
				i++
				continue
			}
			if params[i] == ']' {
				t.Fatalf("an unescaped ] inside the structured data: %q", params)
			}
		}
		if !utf8.Valid(msg[bom+3:]) && utf8.Valid(raw) {
			t.Fatal("MSG lost its UTF-8")
		}
		frame := strconv.AppendInt(nil, int64(len(msg)), 10)
		if len(frame) == 0 {
			t.Fatal("no frame length")
		}
	})
}

// FuzzRELPFrame: whatever a collector (or whatever answers in its place)
// sends, reading its answer returns a frame or an error, never more data
// than the bound, and a frame read is the bytes it says.
func FuzzRELPFrame(f *testing.F) {
	f.Add([]byte("1 rsp 92 200 OK\nrelp_version=0\nrelp_software=librelp,1.11.0,https://librelp.adiscon.com\ncommands=syslog\n"))
	f.Add([]byte("2 rsp 6 200 OK\n"))
	f.Add([]byte("3 rsp 0\n"))
	f.Add([]byte("0 serverclose 0\n"))
	f.Add([]byte("4 rsp 999999999 500"))
	f.Add([]byte("-1 rsp 6 200 OK\n"))
	f.Add([]byte("1234567890 rsp 6 200 OK\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		fr, err := readRELPFrame(bufio.NewReader(bytes.NewReader(in)))
		if err != nil {
			return
		}
		if len(fr.data) > maxRELPAnswer || fr.txnr < 0 || fr.txnr > 999_999_999 {
			t.Fatalf("frame %+v", fr)
		}
		head := strconv.Itoa(fr.txnr) + " " + fr.command + " " + strconv.Itoa(len(fr.data))
		if !bytes.HasPrefix(in, []byte(head)) || !bytes.Contains(in, fr.data) {
			t.Fatalf("frame %+v read from %q", fr, in)
		}
	})
}

func TestNextTxnr(t *testing.T) {
	for _, tc := range []struct{ txnr, n, want int }{
		{0, 1, 1}, {1, 1, 2}, {999_999_998, 1, 999_999_999}, {999_999_999, 1, 1}, {999_999_998, 3, 2},
	} {
		if got := nextTxnr(tc.txnr, tc.n); got != tc.want {
			t.Errorf("nextTxnr(%d, %d) = %d, want %d", tc.txnr, tc.n, got, tc.want)
		}
	}
}
