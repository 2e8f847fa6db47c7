package link

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// EncodeMessage writes msg as the go-sdk's jsonrpc.EncodeMessage does,
// byte for byte (FuzzEncodeMessage holds the two to the same output):
// members in its order, raw members compacted, nothing escaped for HTML.
// It runs on every message aqlguard sends (each call's request to its
// server, each answer to its client), where the go-sdk's goes through
// reflection, a json.Encoder and a copy of its buffer.
func EncodeMessage(msg jsonrpc.Message) ([]byte, error) {
	return AppendMessage(make([]byte, 0, encodedSize(msg)), msg)
}

// encodedSize is room for msg's encoding in the common case (its raw
// members and a few short names), so that it is written in one
// allocation.
func encodedSize(msg jsonrpc.Message) int {
	n := 64
	switch m := msg.(type) {
	case *jsonrpc.Request:
		n += len(m.Method) + len(m.Params)
	case *jsonrpc.Response:
		n += len(m.Result)
		if werr, ok := m.Error.(*jsonrpc.Error); ok && werr != nil {
			n += 48 + len(werr.Message) + len(werr.Data)
		}
	}
	return n
}

// AppendMessage appends EncodeMessage's bytes to dst.
func AppendMessage(dst []byte, msg jsonrpc.Message) ([]byte, error) {
	if out, ok := appendMessage(dst, msg); ok {
		return out, nil
	}
	// What the plain path does not write exactly (an id or a name with
	// characters JSON escapes, an error that is not a *jsonrpc.Error, a
	// raw member that is no JSON): the go-sdk's own encoder, so the bytes
	// and the errors stay its own.
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return dst, err
	}
	return append(dst, data...), nil
}

// appendMessage writes msg in the common case; ok is false for what it
// leaves to the go-sdk (dst's contents past its length are then garbage).
func appendMessage(dst []byte, msg jsonrpc.Message) (out []byte, ok bool) {
	start := len(dst)
	dst = append(dst, `{"jsonrpc":"2.0"`...)
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if dst, ok = appendID(dst, m.ID); !ok {
			return dst[:start], false
		}
		if m.Method != "" {
			dst = append(dst, `,"method":`...)
			if dst, ok = appendPlainString(dst, m.Method); !ok {
				return dst[:start], false
			}
		}
		if len(m.Params) > 0 {
			dst = append(dst, `,"params":`...)
			if dst, ok = appendCompact(dst, m.Params); !ok {
				return dst[:start], false
			}
		}
	case *jsonrpc.Response:
		if dst, ok = appendID(dst, m.ID); !ok {
			return dst[:start], false
		}
		if len(m.Result) > 0 {
			dst = append(dst, `,"result":`...)
			if dst, ok = appendCompact(dst, m.Result); !ok {
				return dst[:start], false
			}
		}
		if m.Error != nil {
			werr, isWire := m.Error.(*jsonrpc.Error)
			if !isWire || werr == nil {
				return dst[:start], false // the go-sdk's toWireError decides its code and message
			}
			dst = append(dst, `,"error":{"code":`...)
			dst = strconv.AppendInt(dst, werr.Code, 10)
			dst = append(dst, `,"message":`...)
			if dst, ok = appendPlainString(dst, werr.Message); !ok {
				return dst[:start], false
			}
			if len(werr.Data) > 0 {
				dst = append(dst, `,"data":`...)
				if dst, ok = appendCompact(dst, werr.Data); !ok {
					return dst[:start], false
				}
			}
			dst = append(dst, '}')
		}
	default:
		return dst[:start], false
	}
	return append(dst, '}'), true
}

func appendID(dst []byte, id jsonrpc.ID) ([]byte, bool) {
	switch v := id.Raw().(type) {
	case nil:
		return dst, true
	case int64:
		return strconv.AppendInt(append(dst, `,"id":`...), v, 10), true
	case string:
		return appendPlainString(append(dst, `,"id":`...), v)
	}
	return dst, false
}

// appendPlainString quotes s when JSON needs no escape for it: printable
// ASCII without a quote or a backslash (encoding/json would escape the
// rest, each in its own way).
func appendPlainString(dst []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return dst, false
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"'), true
}

// appendCompact appends raw without its insignificant white space, as
// encoding/json writes a json.RawMessage; false when raw is no JSON.
func appendCompact(dst []byte, raw json.RawMessage) ([]byte, bool) {
	buf := bytes.NewBuffer(dst)
	if json.Compact(buf, raw) != nil {
		return dst, false
	}
	return buf.Bytes(), true
}
