package link

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
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
// A goroutine reads, so that Close unblocks Read even when the reader
// cannot be closed (a process's stdin).
type LineConn struct {
	w     io.Writer
	close func() error

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
	err  error
}

// lineBatch collects the responses to one incoming batch, which go out
// as one array once all are there.
type lineBatch struct {
	unresolved map[jsonrpc.ID]int
	responses  []*jsonrpc.Response
}

// NewLineConn reads messages from r and writes them to w; closeFn (may be
// nil) is called once by Close, to close the underlying streams.
func NewLineConn(r io.Reader, w io.Writer, closeFn func() error) *LineConn {
	c := &LineConn{w: w, close: closeFn, incoming: make(chan lineOrErr), closed: make(chan struct{})}
	go c.readLines(r)
	return c
}

func (c *LineConn) readLines(r io.Reader) {
	// One streaming decoder for the connection, as the go-sdk frames the
	// stream: a message may even span lines (MCP says it must not, but
	// servers that do work with the go-sdk, so they work through us).
	lim := &frameLimit{r: r}
	dec := json.NewDecoder(lim)
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == nil {
			// What follows a message on its line must be its end.
			var next [1]byte
			if n, _ := dec.Buffered().Read(next[:]); n > 0 && next[0] != '\n' && next[0] != '\r' {
				err = errors.New("invalid trailing data at the end of a message")
			}
		}
		if lim.over {
			err = fmt.Errorf("a message is longer than %d bytes", MaxLineLength)
		}
		select {
		case c.incoming <- lineOrErr{raw, err}:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
		lim.n = 0
	}
}

// frameLimit fails a read once one message has taken more than
// MaxLineLength bytes (counted from where the decoder refilled after the
// message before: a bound, not an exact length).
type frameLimit struct {
	r    io.Reader
	n    int64 // bytes read for the current message so far
	over bool
}

func (l *frameLimit) Read(p []byte) (int, error) {
	if l.n >= MaxLineLength {
		l.over = true
		return 0, errors.New("message too long")
	}
	if rest := MaxLineLength - l.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	return n, err
}

// Read returns the next message.
func (c *LineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
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
	line := bytes.TrimSpace(in.line)
	if len(line) == 0 || line[0] != '[' {
		return DecodeMessage(line)
	}
	msgs, err := DecodeBatch(line)
	if err != nil {
		return nil, err
	}
	batch := &lineBatch{unresolved: map[jsonrpc.ID]int{}}
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			if _, dup := batch.unresolved[req.ID]; dup {
				return nil, fmt.Errorf("duplicate message ID %v in a batch", req.ID.Raw())
			}
			batch.unresolved[req.ID] = len(batch.responses)
			batch.responses = append(batch.responses, nil)
		}
	}
	if len(batch.unresolved) > 0 {
		c.batchMu.Lock()
		if c.batches == nil {
			c.batches = map[jsonrpc.ID]*lineBatch{}
		}
		for id := range batch.unresolved {
			if _, seen := c.batches[id]; seen {
				c.batchMu.Unlock()
				return nil, fmt.Errorf("invalid request: a batch holds request %v, which is still open", id.Raw())
			}
		}
		for id := range batch.unresolved {
			c.batches[id] = batch
		}
		c.batchMu.Unlock()
	}
	c.queue = msgs[1:]
	return msgs[0], nil
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
		if raws[i], err = jsonrpc.EncodeMessage(r); err != nil {
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
	members, err := rawjson.Split(bytes.Clone(data))
	if err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	var version string
	if raw, ok := rawjson.Get(members, "jsonrpc"); ok {
		if err := unmarshalString(raw, &version); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	if version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", version, "2.0")
	}
	var idv any
	if raw, ok := rawjson.Get(members, "id"); ok {
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil && n > -1<<53 && n < 1<<53 {
			idv = float64(n) // what json.Unmarshal makes of a number, exactly
		} else if err := json.Unmarshal(raw, &idv); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	id, err := jsonrpc.MakeID(idv)
	if err != nil {
		return nil, err
	}
	if raw, ok := rawjson.Get(members, "method"); ok {
		var method string
		if err := unmarshalString(raw, &method); err != nil {
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
func unmarshalString(raw json.RawMessage, dst *string) error {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		plain := true
		for _, c := range raw[1 : len(raw)-1] {
			if c == '\\' || c == '"' || c < 0x20 || c >= utf8.RuneSelf {
				plain = false
				break
			}
		}
		if plain {
			*dst = string(raw[1 : len(raw)-1])
			return nil
		}
	}
	return json.Unmarshal(raw, dst)
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
		if all, inBatch := c.answer(resp); inBatch {
			if all == nil {
				return nil
			}
			data, err = EncodeBatch(all)
		} else {
			data, err = jsonrpc.EncodeMessage(msg)
		}
	} else {
		data, err = jsonrpc.EncodeMessage(msg)
	}
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return ErrClosed
	default:
	}
	_, err = c.w.Write(append(data, '\n'))
	return err
}

// answer records a response to a batched request; all is the batch's
// responses once resp completed it.
func (c *LineConn) answer(resp *jsonrpc.Response) (all []*jsonrpc.Response, inBatch bool) {
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
	return b.responses, true
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
