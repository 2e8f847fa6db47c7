package link

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineLength bounds one message on a stdio stream, as the go-sdk's
// mcp.DefaultMaxLineLength does.
const MaxLineLength = mcp.DefaultMaxLineLength

// LineConn is MCP's stdio transport — newline-delimited JSON-RPC, batches
// of the revisions that had them included — as an mcp.Connection. It
// does what mcp.IOTransport does, but decodes each message once with
// encoding/json: the go-sdk's decoder allocates a fresh 32 KiB buffer for
// every message, two or three times per message, which on a guarded call
// was most of what aqlguard allocated (issue 11).
//
// The stream is framed by lines, each read to its newline (at most
// MaxLineLength bytes): one bad line is one bad message, and the
// connection goes on. A line that is not a JSON-RPC message is answered
// with the error JSON-RPC names for it when the other side is a client
// (AnswerBadLines), and skipped when it is a server, whose stray output
// (a banner, a debug print) ends nothing.
//
// A goroutine reads, so that Close unblocks Read even when the reader
// cannot be closed (a process's stdin). It hands each message to the
// Peer itself (Pusher) once the Peer has started; Read then brings only
// the stream's end.
type LineConn struct {
	w     io.Writer
	close func() error

	// AnswerBadLines says the other side is a client: a line that is not
	// a JSON-RPC message is answered with a parse error (-32700, id null)
	// or an invalid request (-32600, with the line's id when it has a
	// valid one), as JSON-RPC 2.0 says. Otherwise the line is skipped,
	// and a message may span lines (servers that pretty-print work with
	// the go-sdk, so they work through us). Set before the first Read.
	AnswerBadLines bool
	// OnBadLine, when set, is told of every line answered or skipped as
	// bad: its start and why. Set before the first Read.
	OnBadLine func(start []byte, why string)

	r        io.Reader
	receive  atomic.Pointer[func(jsonrpc.Message) bool] // PushTo's
	started  sync.Once
	incoming chan lineOrErr
	closed   chan struct{}
	once     sync.Once

	readMu sync.Mutex
	queue  []jsonrpc.Message

	writeMu sync.Mutex
	batchMu sync.Mutex
	batches map[jsonrpc.ID]*lineBatch
}

type lineOrErr struct {
	line []byte
	bad  string          // why the line is no JSON text ("" when it is one)
	id   json.RawMessage // a bad line's request id, when it could be read
	err  error           // the stream ended
}

// lineBatch collects the responses to one incoming batch, which go out
// as one array once all are there.
type lineBatch struct {
	unresolved map[jsonrpc.ID]int
	responses  []*jsonrpc.Response
	// answered are the entries answered at once, as their lines (the
	// batch's invalid members).
	answered []json.RawMessage
}

// NewLineConn reads messages from r and writes them to w; closeFn (may be
// nil) is called once by Close, to close the underlying streams.
func NewLineConn(r io.Reader, w io.Writer, closeFn func() error) *LineConn {
	return &LineConn{w: w, close: closeFn, r: r, incoming: make(chan lineOrErr), closed: make(chan struct{})}
}

// Why a line is not a message, as the error's message says it (fixed
// phrases: nothing of the line is repeated).
const (
	badJSON      = "Parse error: the line is not JSON"
	badTooLong   = "Invalid Request: the message is longer than the limit of 16 MiB"
	badNotObject = "Invalid Request: not a JSON-RPC request object"
	badVersion   = `Invalid Request: "jsonrpc" must be "2.0"`
	badID        = `Invalid Request: "id" must be a string or a number`
	badMethod    = `Invalid Request: "method" must be a string`
	badNoID      = `Invalid Request: a response needs an "id"`
	badEmpty     = "Invalid Request: an empty batch"
	badMember    = "Invalid Request: a member does not decode"
	badDuplicate = `Invalid Request: the "id" is already in use`
)

func (c *LineConn) readLines() {
	br := bufio.NewReaderSize(c.r, 64<<10)
	var pending []byte // a server's message that goes on on the next line
	send := func(in lineOrErr) bool {
		if receive := c.receive.Load(); receive != nil && in.err == nil {
			var one [1]jsonrpc.Message
			for _, m := range c.messages(in, one[:0]) {
				(*receive)(m) // false: the Peer is done, and Close follows
			}
			return true
		}
		select {
		case c.incoming <- in:
			return true
		case <-c.closed:
			return false
		}
	}
	for {
		line, tooLong, id, err := readLine(br, MaxLineLength)
		text := bytes.TrimSpace(line)
		switch {
		case tooLong:
			pending = nil
			if !send(lineOrErr{line: text, bad: badTooLong, id: id}) {
				return
			}
		case len(text) > 0:
			if !c.AnswerBadLines && pending != nil {
				text = append(append(pending, '\n'), text...)
				pending = nil
			}
			var in lineOrErr
			switch {
			case json.Valid(text):
				in.line = text
			case !c.AnswerBadLines && err == nil && len(text) < MaxLineLength && unfinished(text):
				pending = bytes.Clone(text)
				continue
			default:
				in = lineOrErr{line: text, bad: badJSON}
			}
			if !send(in) {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) && pending != nil && !send(lineOrErr{line: pending, bad: badJSON}) {
				return
			}
			send(lineOrErr{err: err})
			return
		}
	}
}

// readLine reads through the next newline. A line longer than max is
// read to its end and dropped (tooLong): the next line is the next
// message. Of a dropped line only its first 64 bytes are kept (line),
// and the id of the request it is (id, nil when it is none or the id
// cannot be read), scanned as the line goes by (idScanner): what is
// held stays bounded however long the line.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, id json.RawMessage, err error) {
	var scan *idScanner
	for {
		frag, err := br.ReadSlice('\n')
		switch {
		case scan != nil:
			scan.feed(frag)
		case len(line)+len(frag) > max+1:
			scan = &idScanner{}
			scan.feed(line)
			scan.feed(frag)
			if len(line) < 64 {
				line = append(line, frag[:min(len(frag), 64-len(line))]...)
			}
			tooLong, line = true, bytes.Clone(line[:min(len(line), 64)])
		default:
			line = append(line, frag...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if scan != nil {
				id = scan.requestID()
			}
			return line, tooLong, id, err
		}
	}
}

// unfinished reports whether text is the beginning of a JSON value.
func unfinished(text []byte) bool {
	var v json.RawMessage
	err := json.NewDecoder(bytes.NewReader(text)).Decode(&v)
	return errors.Is(err, io.ErrUnexpectedEOF)
}

// Read returns the next message. A line that is not one is answered or
// skipped (see LineConn) and the next one read.
func (c *LineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.started.Do(func() { go c.readLines() })
	c.readMu.Lock()
	defer c.readMu.Unlock()
	for {
		if len(c.queue) > 0 {
			m := c.queue[0]
			c.queue = c.queue[1:]
			return m, nil
		}
		var in lineOrErr
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case in = <-c.incoming:
		}
		if in.err != nil {
			return nil, in.err
		}
		if msgs := c.messages(in, nil); len(msgs) > 0 {
			c.queue = msgs[1:]
			return msgs[0], nil
		}
	}
}

// PushTo is link.Pusher: the reading goroutine hands each message to the
// Peer, where Read would hand it to the Peer's own reading goroutine
// first. The stream's end still comes from Read. Called before the first
// Read (Peer.Start does), so that no message goes one way and the next
// the other.
func (c *LineConn) PushTo(receive func(jsonrpc.Message) bool) { c.receive.Store(&receive) }

// messages appends to dst the messages of one line (none for a bad line,
// which is answered or skipped; a batch's, in order).
func (c *LineConn) messages(in lineOrErr, dst []jsonrpc.Message) []jsonrpc.Message {
	if in.bad != "" {
		c.badLine(in.line, in.bad, in.id)
		return dst
	}
	if in.line[0] == '[' {
		return c.readBatch(in.line, dst)
	}
	// The line is this message's alone (readLine appends to a fresh
	// slice) and was found valid as it was framed.
	m, err := decodeValidLine(in.line)
	if err != nil {
		c.badLine(in.line, invalidWhy(in.line), idOf(in.line))
		return dst
	}
	return append(dst, m)
}

// readBatch appends a batch's messages to dst; its invalid members are
// answered in the batch's answer.
func (c *LineConn) readBatch(line []byte, dst []jsonrpc.Message) []jsonrpc.Message {
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil || len(raws) == 0 {
		c.badLine(line, badEmpty, nil)
		return dst
	}
	batch := &lineBatch{unresolved: map[jsonrpc.ID]int{}}
	msgs := dst
	c.batchMu.Lock()
	for _, raw := range raws {
		m, err := DecodeMessage(raw)
		why := ""
		if err != nil {
			why = invalidWhy(raw)
		} else if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			if _, dup := batch.unresolved[req.ID]; dup || c.batches[req.ID] != nil {
				why = badDuplicate
			}
		}
		if why != "" {
			if c.OnBadLine != nil {
				c.OnBadLine(raw[:min(len(raw), 64)], why)
			}
			batch.answered = append(batch.answered, errorLine(idOf(raw), why))
			batch.responses = append(batch.responses, nil)
			continue
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			batch.unresolved[req.ID] = len(batch.responses)
			batch.responses = append(batch.responses, nil)
			batch.answered = append(batch.answered, nil)
		}
		msgs = append(msgs, m)
	}
	if len(batch.unresolved) > 0 {
		if c.batches == nil {
			c.batches = map[jsonrpc.ID]*lineBatch{}
		}
		for id := range batch.unresolved {
			c.batches[id] = batch
		}
	}
	c.batchMu.Unlock()
	if len(batch.unresolved) == 0 && len(batch.answered) > 0 && slices.ContainsFunc(batch.answered, func(r json.RawMessage) bool { return r != nil }) {
		// Nothing in it waits for an answer: its errors go out now.
		if data, err := encodeLineBatch(batch); err == nil {
			c.writeLine(data)
		}
	}
	return msgs
}

// badLine answers (AnswerBadLines) or skips a line that is not a
// message; id is the line's id when it has a valid one.
func (c *LineConn) badLine(line []byte, why string, id json.RawMessage) {
	if c.OnBadLine != nil {
		c.OnBadLine(line[:min(len(line), 64)], why)
	}
	if !c.AnswerBadLines {
		return
	}
	c.writeLine(errorLine(id, why))
}

// errorLine is the JSON-RPC error answering a bad message: -32700 when
// it was no JSON, -32600 otherwise; id null unless the message had a
// valid one.
func errorLine(id json.RawMessage, why string) json.RawMessage {
	code := jsonrpc.CodeInvalidRequest
	if why == badJSON {
		code, id = jsonrpc.CodeParseError, nil
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	msg, _ := json.Marshal(why)
	data := ""
	if why == badTooLong {
		data = fmt.Sprintf(`,"data":{"max_line_bytes":%d}`, MaxLineLength)
	}
	return json.RawMessage(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s%s}}`, id, code, msg, data))
}

// idOf is a message's id when it is a valid one (a string or a number),
// as sent; nil otherwise.
func idOf(msg []byte) json.RawMessage {
	members, err := rawjson.Split(msg)
	if err != nil {
		return nil
	}
	raw, ok := rawjson.Get(members, "id")
	if !ok || len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	switch v.(type) {
	case string, float64:
		return raw
	}
	return nil
}

// invalidWhy says why a JSON text is no JSON-RPC message.
func invalidWhy(msg []byte) string {
	members, err := rawjson.Split(msg)
	if err != nil {
		return badNotObject
	}
	str := func(key string) (string, bool, bool) { // value, present, is a string
		raw, ok := rawjson.Get(members, key)
		if !ok {
			return "", false, false
		}
		var s string
		return s, true, json.Unmarshal(raw, &s) == nil
	}
	if v, _, isStr := str("jsonrpc"); !isStr || v != "2.0" {
		return badVersion
	}
	if raw, ok := rawjson.Get(members, "id"); ok && string(raw) != "null" && idOf(msg) == nil {
		return badID
	}
	if _, present, isStr := str("method"); present && !isStr {
		return badMethod
	}
	if _, present, _ := str("method"); !present && idOf(msg) == nil {
		return badNoID
	}
	return badMember
}

// DecodeBatch reads a JSON-RPC batch, as the MCP revisions before
// 2025-06-18 allow one: its messages in order. An empty batch, or one
// with a message DecodeMessage refuses, is an error.
func DecodeBatch(data []byte) ([]jsonrpc.Message, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("unmarshaling a jsonrpc batch: %w", err)
	}
	if len(raws) == 0 {
		return nil, errors.New("empty batch")
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	for i, raw := range raws {
		m, err := DecodeMessage(raw)
		if err != nil {
			return nil, fmt.Errorf("message %d of the batch: %w", i, err)
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// EncodeBatch writes the responses to a batch as one array.
func EncodeBatch(responses []*jsonrpc.Response) ([]byte, error) {
	raws := make([]json.RawMessage, len(responses))
	for i, r := range responses {
		var err error
		if raws[i], err = EncodeMessage(r); err != nil {
			return nil, err
		}
	}
	return json.Marshal(raws)
}

// DecodeMessage reads one message as the go-sdk does
// (jsonrpc.DecodeMessage): member names match exactly, "method" present
// makes a request, a response needs an id. FuzzDecodeMessage holds the
// two to the same results. Use it instead of the go-sdk's, which makes a
// decoder with a fresh 32 KiB buffer for every message.
//
// The message's raw members (params, result, error data) are its own
// copy: callers may reuse data.
func DecodeMessage(data []byte) (jsonrpc.Message, error) {
	// One validating pass and a split (rawjson) over a copy, where
	// json.Unmarshal into a map validated, decoded, and copied each
	// member on its own.
	return decode(bytes.Clone(data), false)
}

// DecodeOwned is DecodeMessage for data that is the caller's to give
// away (a POST's body, a line read for this message alone): the message
// shares data's bytes, which nobody may change afterwards.
func DecodeOwned(data []byte) (jsonrpc.Message, error) { return decode(data, false) }

// decodeValidLine is DecodeOwned for a line readLines found valid.
func decodeValidLine(line []byte) (jsonrpc.Message, error) { return decode(line, true) }

// decode reads the message data holds (and keeps its bytes); valid says
// data was just found valid JSON.
func decode(data []byte, valid bool) (jsonrpc.Message, error) {
	var stack [messageMembers]rawjson.Member
	var members []rawjson.Member
	var err error
	if valid {
		members, err = rawjson.SplitValidInto(stack[:0], data)
	} else {
		members, err = rawjson.SplitInto(stack[:0], data)
	}
	if err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	return decodeMembers(members)
}

// messageMembers is room for a JSON-RPC message's members (jsonrpc, id,
// method, params; or result, error) on the decoder's stack.
const messageMembers = 6

// decodeMembers is the message a JSON object's members make.
func decodeMembers(members []rawjson.Member) (jsonrpc.Message, error) {
	raw, ok := rawjson.Get(members, "jsonrpc")
	if !ok || string(raw) != `"2.0"` { // else "2.0" spelled with escapes, or no version
		var version string
		if ok {
			var err error
			if version, err = unmarshalString(raw); err != nil {
				return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
			}
		}
		if version != "2.0" {
			return nil, fmt.Errorf("invalid message version tag %q; expected %q", version, "2.0")
		}
	}
	var idv any
	if raw, ok := rawjson.Get(members, "id"); ok {
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil && n > -1<<53 && n < 1<<53 {
			idv = float64(n) // what json.Unmarshal makes of a number, exactly
		} else if isPlainString(raw) {
			idv = string(raw[1 : len(raw)-1])
		} else if idv, err = unmarshalInto[any](raw); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	id, err := jsonrpc.MakeID(idv)
	if err != nil {
		return nil, err
	}
	if raw, ok := rawjson.Get(members, "method"); ok {
		method, err := unmarshalString(raw)
		if err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		params, _ := rawjson.Get(members, "params")
		return &jsonrpc.Request{ID: id, Method: method, Params: params}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("JSON RPC invalid request: a response without an id")
	}
	result, _ := rawjson.Get(members, "result")
	resp := &jsonrpc.Response{ID: id, Result: result}
	if raw, ok := rawjson.Get(members, "error"); ok && string(bytes.TrimSpace(raw)) != "null" {
		errMembers, err := rawjson.Split(raw)
		if err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		data, _ := rawjson.Get(errMembers, "data")
		werr := &jsonrpc.Error{Data: data}
		for key, dst := range map[string]any{"code": &werr.Code, "message": &werr.Message} {
			if v, ok := rawjson.Get(errMembers, key); ok {
				if err := json.Unmarshal(v, dst); err != nil {
					return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
				}
			}
		}
		resp.Error = werr
	}
	return resp, nil
}

// unmarshalString is json.Unmarshal into a string, without its cost for
// the common case: a plain ASCII string with no escape.
func unmarshalString(raw json.RawMessage) (string, error) {
	if isPlainString(raw) {
		return string(raw[1 : len(raw)-1]), nil
	}
	return unmarshalInto[string](raw)
}

// isPlainString reports whether raw is a JSON string of printable ASCII
// with no escape: its text is what is between its quotes.
func isPlainString(raw json.RawMessage) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if c == '\\' || c == '"' || c < 0x20 || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// unmarshalInto is json.Unmarshal into a T of its own: the decoders'
// plain paths keep their variables on the stack (one passed to
// json.Unmarshal would be on the heap on every path).
func unmarshalInto[T any](raw json.RawMessage) (T, error) {
	var v T
	err := json.Unmarshal(raw, &v)
	return v, err
}

// Write sends one message (the responses to a batch together, as one
// array, once the last of them is written).
func (c *LineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var data []byte
	var err error
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if b, inBatch := c.answer(resp); inBatch {
			if b == nil {
				return nil
			}
			data, err = encodeLineBatch(b)
		} else {
			data, err = EncodeMessage(msg)
		}
	} else {
		data, err = EncodeMessage(msg)
	}
	if err != nil {
		return err
	}
	return c.writeLine(data)
}

// writeLine writes one line.
func (c *LineConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return ErrClosed
	default:
	}
	_, err := c.w.Write(append(data, '\n'))
	return err
}

// answer records a response to a batched request; b is the batch once
// resp completed it.
func (c *LineConn) answer(resp *jsonrpc.Response) (b *lineBatch, inBatch bool) {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	b, ok := c.batches[resp.ID]
	if !ok {
		return nil, false
	}
	b.responses[b.unresolved[resp.ID]] = resp
	delete(b.unresolved, resp.ID)
	delete(c.batches, resp.ID)
	if len(b.unresolved) > 0 {
		return nil, true
	}
	return b, true
}

// encodeLineBatch writes a batch's answers as one array, in its order.
func encodeLineBatch(b *lineBatch) ([]byte, error) {
	raws := make([]json.RawMessage, 0, len(b.responses))
	for i, r := range b.responses {
		switch {
		case b.answered[i] != nil:
			raws = append(raws, b.answered[i])
		case r != nil:
			raw, err := EncodeMessage(r)
			if err != nil {
				return nil, err
			}
			raws = append(raws, raw)
		}
	}
	return json.Marshal(raws)
}

// Close ends the connection; Read returns io.EOF from then on.
func (c *LineConn) Close() error {
	var err error
	c.once.Do(func() {
		close(c.closed)
		if c.close != nil {
			err = c.close()
		}
	})
	return err
}

// SessionID is empty: stdio has no sessions.
func (c *LineConn) SessionID() string { return "" }
