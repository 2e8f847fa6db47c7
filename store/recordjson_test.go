package store

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

// recordJSONCases are records at the edges of what the fast encoder
// writes itself and what it leaves to encoding/json.
func recordJSONCases() map[string]Record {
	at := time.Date(2026, 11, 29, 8, 0, 0, 120000000, time.UTC)
	east := time.FixedZone("east", 5*3600+30*60)
	odd := time.FixedZone("odd", 3600+17)
	return map[string]Record{
		"zero":                  {},
		"least":                 {Seq: 1, Time: at, Prev: GenesisHash},
		"every field":           {Seq: math.MaxUint64, Time: at, Kind: "decision", Principal: "p", Session: "s", Client: "c", Process: "pr", Server: "fs", Operation: "op", Tool: "read", ArgsSHA256: "ab", Args: json.RawMessage(`{"a": [1, 2.5e3, true, null, "x<y>&z\u2028"]}`), ArgsText: "t", ArgsBytes: -3, Preview: "pv", Approval: "ap", Decision: "allow", Stage: "st", Layer: "user", Tier: "t1", Risk: -7, Factors: []string{"a", "", "<&>"}, ChallengeID: "ch", Token: "tk", Execution: "ex", Result: "ok", DurationMS: 0.000125, Prev: "pv", Hash: "h"},
		"escapes":               {Time: at, Principal: "ünïcode \u2028\u2029 <b>&amp;</b> \"q\" \\ \x7f", ArgsText: "\x00\x01\x08\x0c\x1f\t\r\n\ufffd", Result: "bad \xff\xfe utf-8 \xe2\x80"},
		"raw args with spaces":  {Time: at, Args: json.RawMessage(" {\n\"a\" : \"\\u003c\u2029\" } ")},
		"raw args invalid":      {Time: at, Args: json.RawMessage(`{"a":`)},
		"raw args raw E2 bytes": {Time: at, Args: json.RawMessage("\"\xe2\x80\xa8\xe2\x80\xa9\xe2\x80\xaa\"")},
		"empty factors":         {Time: at, Factors: []string{}},
		"duration big":          {Time: at, DurationMS: 1e21},
		"duration small":        {Time: at, DurationMS: 1e-7},
		"duration negative":     {Time: at, DurationMS: -12.5},
		"duration edge":         {Time: at, DurationMS: 123456789012345678901},
		"duration NaN":          {Time: at, DurationMS: math.NaN()},
		"duration Inf":          {Time: at, DurationMS: math.Inf(1)},
		"zone":                  {Time: at.In(east)},
		"zone of seconds":       {Time: at.In(odd)},
		"year 10000":            {Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"year -1":               {Time: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		"nanos":                 {Time: time.Date(2026, 1, 2, 3, 4, 5, 1, time.UTC)},
		"findings":              {Time: at, Findings: []Finding{{Kind: "secret", Rule: "r", Count: 2}}},
		"gap":                   {Time: at, Gap: &Gap{Segment: "s", AfterSeq: 3}},
		"checkpoint":            {Time: at, Checkpoint: &Checkpoint{Seq: 1, Time: at}},
	}
}

// checkRecordJSON fails unless appendRecordJSON writes r as json.Marshal
// does, or leaves it to encoding/json; and the log's encoder's line is
// json.Marshal's either way.
func checkRecordJSON(t *testing.T, name string, r Record) {
	t.Helper()
	want, werr := json.Marshal(r)
	got, ok := appendRecordJSON(nil, &r, &bytes.Buffer{})
	if ok && (werr != nil || !bytes.Equal(got, want)) {
		t.Fatalf("%s: the fast encoding differs from json.Marshal (error %v):\n got %s\nwant %s", name, werr, got, want)
	}
	var e recordEncoder
	c := r
	line, err := e.encode(&c)
	if (err != nil) != (werr != nil) {
		t.Fatalf("%s: encode error %v, json.Marshal's %v", name, err, werr)
	}
	if err != nil {
		return
	}
	if h, _ := hashOf(c); h != c.Hash {
		t.Fatalf("%s: hash %s, verify computes %s", name, c.Hash, h)
	}
	want, _ = json.Marshal(c) // with its hash, and what validUTF8 replaced
	if string(line) != string(want)+"\n" {
		t.Fatalf("%s: the log's line differs from json.Marshal:\n got %s\nwant %s", name, line, want)
	}
}

func TestRecordJSONMatchesEncodingJSON(t *testing.T) {
	fast := 0
	for name, r := range recordJSONCases() {
		checkRecordJSON(t, name, r)
		if _, ok := appendRecordJSON(nil, &r, &bytes.Buffer{}); ok {
			fast++
		}
	}
	if fast < 11 {
		t.Fatalf("only %d cases took the fast path", fast)
	}
}

// FuzzRecordJSON: whatever a record's strings, arguments, numbers and
// time hold (they come from servers, the OS and the model), the fast
// encoding is json.Marshal's, byte for byte, or it is not used.
func FuzzRecordJSON(f *testing.F) {
	f.Add("decision", "p <&>", "\u2028x\xff", []byte(`{"a": [1, "<"]}`), int64(7), 0.25, int64(1764403200123456789), "f1")
	f.Add("", "", "", []byte(nil), int64(0), 0.0, int64(0), "")
	f.Add("\x00\"\\", "\t\n", "ü", []byte(" [\"\xe2\x80\xa8\"] "), int64(-1), 1e-7, int64(-62135596800000000000/1000), "")
	f.Fuzz(func(t *testing.T, kind, principal, result string, args []byte, n int64, dur float64, nanos int64, factor string) {
		r := Record{Seq: uint64(n), Time: time.Unix(0, nanos).UTC(), Kind: kind, Principal: principal, Result: result,
			Args: json.RawMessage(args), Risk: int(n), ArgsBytes: int(n >> 3), DurationMS: dur, Prev: result + kind}
		if factor != "" {
			r.Factors = []string{factor, kind}
		}
		checkRecordJSON(t, "fuzzed", r)
	})
}

// BenchmarkRecordEncode is one allowed call's decision record encoded
// by appendRecordJSON ("fast") and by encoding/json, which encoded every
// record before ("encoding-json"), in the same run; the hash and the
// line around it are the same for both and left out.
func BenchmarkRecordEncode(b *testing.B) {
	rec := Record{Seq: 41, Time: time.Now().UTC(), Kind: "decision", Principal: "bench", Session: "s", Process: "host/1",
		Server: "ev", Operation: "ev_echo", Tool: "echo", ArgsSHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		Args: json.RawMessage(`{"message":"hello"}`), Decision: "allow", Stage: "pattern", Tier: "advisory", Risk: 10,
		Factors: []string{"auto_approve: *"}, DurationMS: 0.1, Prev: GenesisHash}
	b.Run("fast", func(b *testing.B) {
		var line []byte
		var scratch bytes.Buffer
		for b.Loop() {
			var ok bool
			if line, ok = appendRecordJSON(line[:0], &rec, &scratch); !ok {
				b.Fatal("not on the fast path")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for b.Loop() {
			buf.Reset()
			if err := enc.Encode(&rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}
