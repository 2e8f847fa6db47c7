package store

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// appendRecordJSON appends r as encoding/json writes it (HTML-escaped,
// members in field order, omitempty as tagged), without reflection: every
// guarded call writes two records, and reflection was a twentieth of a
// call's CPU (bench/RESULTS.md, issue 33). ok is false for a record this
// path leaves to encoding/json (findings, a gap, a checkpoint, arguments
// that are not valid JSON, a time or a number encoding/json refuses or
// writes another way): its caller encodes that one with encoding/json.
// The bytes must be encoding/json's exactly, since the record's hash is
// taken over them and verify hashes json.Marshal's: FuzzRecordJSON and
// TestRecordJSONMatchesEncodingJSON compare the two.
func appendRecordJSON(b []byte, r *Record, scratch *bytes.Buffer) ([]byte, bool) {
	if len(r.Findings) > 0 || r.Gap != nil || r.Checkpoint != nil {
		return b, false
	}
	if y := r.Time.Year(); y < 0 || y > 9999 {
		return b, false
	}
	if _, off := r.Time.Zone(); off%60 != 0 || off <= -24*3600 || off >= 24*3600 {
		return b, false
	}
	if d := math.Abs(r.DurationMS); math.IsNaN(r.DurationMS) || d != 0 && (d < 1e-6 || d >= 1e21) {
		return b, false // NaN and Inf fail; 'e' format: left to encoding/json
	}
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, `,"time":"`...)
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","kind":`...)
	b = appendJSONString(b, r.Kind)
	b = append(b, `,"principal":`...)
	b = appendJSONString(b, r.Principal)
	b = member(b, `,"session":`, r.Session)
	b = member(b, `,"client":`, r.Client)
	b = member(b, `,"process":`, r.Process)
	b = member(b, `,"server":`, r.Server)
	b = member(b, `,"operation":`, r.Operation)
	b = member(b, `,"tool":`, r.Tool)
	b = member(b, `,"args_sha256":`, r.ArgsSHA256)
	if len(r.Args) > 0 {
		scratch.Reset()
		if json.Compact(scratch, r.Args) != nil {
			return b, false // encoding/json says why
		}
		b = append(b, `,"args":`...)
		b = appendHTMLEscaped(b, scratch.Bytes())
	}
	b = member(b, `,"args_text":`, r.ArgsText)
	if r.ArgsBytes != 0 {
		b = append(b, `,"args_bytes":`...)
		b = strconv.AppendInt(b, int64(r.ArgsBytes), 10)
	}
	b = member(b, `,"preview":`, r.Preview)
	b = member(b, `,"approval":`, r.Approval)
	b = member(b, `,"decision":`, r.Decision)
	b = member(b, `,"stage":`, r.Stage)
	b = member(b, `,"layer":`, r.Layer)
	b = member(b, `,"tier":`, r.Tier)
	if r.Risk != 0 {
		b = append(b, `,"risk":`...)
		b = strconv.AppendInt(b, int64(r.Risk), 10)
	}
	if len(r.Factors) > 0 {
		b = append(b, `,"factors":[`...)
		for i, f := range r.Factors {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, f)
		}
		b = append(b, ']')
	}
	b = member(b, `,"challenge_id":`, r.ChallengeID)
	b = member(b, `,"token":`, r.Token)
	b = member(b, `,"execution":`, r.Execution)
	b = member(b, `,"result":`, r.Result)
	if r.DurationMS != 0 {
		b = append(b, `,"duration_ms":`...)
		b = strconv.AppendFloat(b, r.DurationMS, 'f', -1, 64)
	}
	b = append(b, `,"prev":`...)
	b = appendJSONString(b, r.Prev)
	b = member(b, `,"hash":`, r.Hash)
	return append(b, '}'), true
}

// member appends an omitempty string member.
func member(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, name...), s)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as encoding/json does with HTML
// escaping: <, > and & as \u003c, \u003e, \u0026, U+2028 and U+2029
// escaped, a byte that is not UTF-8 as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendHTMLEscaped appends compact JSON with <, >, &, U+2028 and
// U+2029 escaped, as encoding/json writes a json.RawMessage.
func appendHTMLEscaped(b, src []byte) []byte {
	start := 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case c == '<' || c == '>' || c == '&':
			b = append(b, src[start:i]...)
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8:
			b = append(b, src[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[src[i+2]&0xF])
			start = i + 3
			i += 2
		}
	}
	return append(b, src[start:]...)
}
