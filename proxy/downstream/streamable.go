package downstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/revision"
	"github.com/aqlguard/aqlguard/proxy/revision/mcpheader"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// streamableConn is the client side of MCP's Streamable HTTP transport as
// a raw mcp.Connection. The go-sdk has one, but it learns the session's
// protocol version and opens the stream of server-initiated messages only
// when its own ClientSession tells it the handshake is done, which a
// relay passing raw JSON-RPC never does: without the stream, a server's
// list_changed and resources/updated sent outside a request never
// arrived.
//
// Each message is POSTed; a request's answer comes back as JSON or as an
// event stream carrying the related notifications and requests first. The
// standalone event stream (GET) opens once the initialized notification
// has gone out. Close ends the session with DELETE.
type streamableConn struct {
	url    string
	client *http.Client

	incoming chan jsonrpc.Message
	ctx      context.Context // lives until Close
	cancel   context.CancelFunc

	// bindings are a tool's x-mcp-header bindings (set by the Server
	// before the first message): a 2026-07-28 call mirrors its arguments
	// into Mcp-Param-* headers.
	bindings func(tool string) []mcpheader.Binding

	mu        sync.Mutex
	sessionID string
	protocol  string
	listening bool
	failed    error
	closeOnce sync.Once
	// inflight cancels the POST of a 2026-07-28 request, by request id:
	// closing its stream is how that revision cancels a request.
	inflight map[string]context.CancelFunc
}

// maxEvent bounds one server-sent event (a tool result can be large).
const maxEvent = 64 << 20

func newStreamableConn(url string, client *http.Client) *streamableConn {
	ctx, cancel := context.WithCancel(context.Background())
	return &streamableConn{url: url, client: client, incoming: make(chan jsonrpc.Message, 64), ctx: ctx, cancel: cancel,
		inflight: map[string]context.CancelFunc{}}
}

func (c *streamableConn) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

func (c *streamableConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.incoming:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.ctx.Done():
		c.mu.Lock()
		err := c.failed
		c.mu.Unlock()
		if err == nil {
			err = io.EOF
		}
		return nil, err
	}
}

// fail ends the connection with err (the reader sees it).
func (c *streamableConn) fail(err error) {
	c.mu.Lock()
	if c.failed == nil {
		c.failed = err
	}
	c.mu.Unlock()
	c.cancel()
}

func (c *streamableConn) deliver(m jsonrpc.Message) {
	select {
	case c.incoming <- m:
	case <-c.ctx.Done():
	}
}

func (c *streamableConn) headers(h http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessionID != "" {
		h.Set("Mcp-Session-Id", c.sessionID)
	}
	if c.protocol != "" {
		h.Set("Mcp-Protocol-Version", c.protocol)
	}
}

func (c *streamableConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	call, _ := msg.(*jsonrpc.Request)
	version := revision.RequestVersion(call)
	if call != nil && call.Method == link.MethodCancelled && c.abort(call.Params) {
		return nil // a 2026-07-28 request: its stream is closed instead
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	reqCtx := c.ctx
	if version != "" && call.IsCall() {
		var cancel context.CancelFunc
		reqCtx, cancel = context.WithCancel(c.ctx)
		key := link.IDKey(call.ID)
		c.mu.Lock()
		c.inflight[key] = cancel // post lets it go (done) once answered
		c.mu.Unlock()
	}
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, c.url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	// The call's trace (the guard's span, or the client's own trace
	// context) goes on to the server as W3C traceparent.
	if trace.SpanContextFromContext(ctx).IsValid() {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	if version != "" {
		revision.SetHeaders(req.Header, version, call, c.bindings)
	} else {
		c.headers(req.Header)
	}
	initialized := call != nil && call.Method == "notifications/initialized"
	if call != nil && !call.IsCall() {
		call = nil // a notification: nothing comes back
	}
	// The answer to a request may take as long as the call; the write
	// itself is done once the server has taken the message.
	accepted := make(chan error, 1)
	go c.post(req, call, initialized, accepted)
	select {
	case err := <-accepted:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// post sends one message and delivers what comes back. accepted gets the
// outcome of the sending itself. After the initialized notification, the
// standalone stream opens.
func (c *streamableConn) post(req *http.Request, call *jsonrpc.Request, initialized bool, accepted chan<- error) {
	if call != nil {
		defer c.done(call.ID)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		accepted <- err
		return
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.mu.Lock()
		if c.sessionID == "" {
			c.sessionID = id
		}
		c.mu.Unlock()
	}
	switch {
	case resp.StatusCode == http.StatusNotFound && c.SessionID() != "":
		// The server forgot the session: every later message would fail
		// alike. Ending the connection has the server restarted.
		accepted <- nil
		c.fail(errors.New("the server ended the session (HTTP 404)"))
		return
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		werr := httpError(resp.StatusCode, resp.Header.Get("Content-Type"), body)
		if call == nil {
			accepted <- werr
			return
		}
		// The request is sent, and failed: its caller gets the failure
		// as the request's answer.
		accepted <- nil
		c.deliver(&jsonrpc.Response{ID: call.ID, Error: werr})
		return
	}
	accepted <- nil
	if call == nil {
		if initialized {
			c.listen()
		}
		return
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "text/event-stream":
		c.readEvents(resp.Body, call)
	default:
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxEvent))
		if err != nil {
			c.deliver(&jsonrpc.Response{ID: call.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "reading the answer: " + err.Error()}})
			return
		}
		// A body that is not JSON-RPC at all (an HTML page from a proxy
		// in between, say) fails the request now, not at its call
		// timeout. Anything else is left as a direct client leaves it: a
		// server may answer a request with 202 or another message and
		// send the response on its GET stream, as go-sdk clients allow.
		if _, wellFormed := c.take(body, call); !wellFormed && c.ctx.Err() == nil {
			c.deliver(&jsonrpc.Response{ID: call.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("the server answered the request with HTTP %d and a body that is not JSON-RPC (%s)",
					resp.StatusCode, resp.Header.Get("Content-Type"))}})
		}
	}
}

// abort closes the stream of the 2026-07-28 request a
// notifications/cancelled names, and reports whether there was one.
func (c *streamableConn) abort(params json.RawMessage) bool {
	id, ok := link.CancelledID(params)
	if !ok {
		return false
	}
	c.mu.Lock()
	cancel, ok := c.inflight[link.IDKey(id)]
	c.mu.Unlock()
	if ok {
		cancel()
	}
	return ok
}

// done lets a request's POST go once it has been answered.
func (c *streamableConn) done(id jsonrpc.ID) {
	c.mu.Lock()
	cancel, ok := c.inflight[link.IDKey(id)]
	delete(c.inflight, link.IDKey(id))
	c.mu.Unlock()
	if ok {
		cancel()
	}
}

// maxErrorBody bounds what is read of an HTTP error's body.
const maxErrorBody = 64 << 10

// httpError is the JSON-RPC error a request answered with an HTTP error
// status stands for. A body that is a JSON-RPC error response (a
// 2026-07-28 server answers header mismatches, unsupported versions and
// unknown methods so, with 400 or 404) is that error, as sent. Anything
// else — a plain-text 400 from an older server, a proxy's HTML page —
// becomes the error the status means: 404 and 405 method not found
// (what 2026-07-28 answers an unknown method with), another 4xx an
// invalid request, 5xx an internal error, each naming the status and the
// start of the body.
func httpError(status int, contentType string, body []byte) *jsonrpc.Error {
	if m, err := link.DecodeMessage(bytes.TrimSpace(body)); err == nil {
		if r, ok := m.(*jsonrpc.Response); ok && r.Error != nil {
			var werr *jsonrpc.Error
			if errors.As(r.Error, &werr) {
				return werr
			}
		}
	}
	text := strings.TrimSpace(string(body))
	code := int64(jsonrpc.CodeInternalError)
	switch {
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed, status == http.StatusBadRequest && unsupportedMethod(text):
		code = jsonrpc.CodeMethodNotFound
	case status >= 400 && status < 500:
		code = jsonrpc.CodeInvalidRequest
	}
	if ct, _, _ := mime.ParseMediaType(contentType); ct != "text/plain" && ct != "application/json" {
		text = "" // an HTML page or worse says nothing a client could use
	}
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	msg := fmt.Sprintf(httpErrorFormat, status, http.StatusText(status))
	if text != "" {
		msg += ": " + text
	}
	return &jsonrpc.Error{Code: code, Message: msg}
}

// httpErrorFormat starts the message of an error httpError made.
const httpErrorFormat = "the server answered HTTP %d %s"

// httpStatus is the HTTP status an error httpError made names, or 0.
func httpStatus(werr *jsonrpc.Error) int {
	var status int
	if _, err := fmt.Sscanf(werr.Message, "the server answered HTTP %d ", &status); err != nil {
		return 0
	}
	return status
}

// unsupportedMethod reports whether a plain-text 400 says the request's
// method is not one the server has: a go-sdk server of 2025-11-25 over
// stateful HTTP answers an unknown method so ("JSON RPC not handled:
// "x" unsupported"), where 2026-07-28 says -32601 and 404.
func unsupportedMethod(text string) bool {
	t := strings.ToLower(text)
	return strings.Contains(t, "not handled") || strings.Contains(t, "method not found") || strings.Contains(t, "unsupported method")
}

// take decodes one message (or a batch) and delivers it, noting the
// protocol version the answer to initialize settles on. It reports
// whether what it delivered holds the answer to call, and whether data
// was JSON-RPC at all: nothing, a message, or a batch.
func (c *streamableConn) take(data []byte, call *jsonrpc.Request) (answered, wellFormed bool) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return false, true
	}
	if data[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(data, &batch) != nil {
			return false, false
		}
		for _, m := range batch {
			if a, _ := c.take(m, call); a {
				answered = true
			}
		}
		return answered, true
	}
	m, err := link.DecodeMessage(data)
	if err != nil {
		return false, false
	}
	if r, ok := m.(*jsonrpc.Response); ok && call != nil && call.Method == mcpmethod.Initialize && r.ID == call.ID && r.Error == nil {
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(r.Result, &res) == nil {
			c.mu.Lock()
			c.protocol = res.ProtocolVersion
			c.mu.Unlock()
		}
	}
	r, isResponse := m.(*jsonrpc.Response)
	c.deliver(m)
	return isResponse && call != nil && r.ID == call.ID, true
}

// readEvents delivers the messages of an event stream until it ends.
func (c *streamableConn) readEvents(body io.Reader, call *jsonrpc.Request) {
	answered := false
	sc := bufio.NewScanner(body)
	// Small to start with (most events are a few hundred bytes; a buffer
	// of 64 KiB per stream was most of what a proxied call allocated),
	// grown by the scanner up to maxEvent.
	sc.Buffer(make([]byte, 0, 4<<10), maxEvent)
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if data.Len() > 0 {
				if a, _ := c.take(data.Bytes(), call); a {
					answered = true
				}
				data.Reset()
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			line = bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			data.Write(line)
		}
	}
	if data.Len() > 0 {
		if a, _ := c.take(data.Bytes(), call); a {
			answered = true
		}
	}
	if call != nil && !answered && c.ctx.Err() == nil {
		c.deliver(&jsonrpc.Response{ID: call.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "the server's event stream ended before the answer"}})
	}
}

// listen opens the standalone event stream for what the server sends
// outside requests, and keeps it open (reconnecting with backoff) until
// Close. A server that offers none (405) is left alone.
func (c *streamableConn) listen() {
	c.mu.Lock()
	if c.listening {
		c.mu.Unlock()
		return
	}
	c.listening = true
	c.mu.Unlock()
	go func() {
		for attempt := 0; c.ctx.Err() == nil; attempt++ {
			req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, c.url, nil)
			if err != nil {
				return
			}
			req.Header.Set("Accept", "text/event-stream")
			c.headers(req.Header)
			resp, err := c.client.Do(req)
			if err == nil {
				switch {
				case resp.StatusCode == http.StatusMethodNotAllowed:
					resp.Body.Close()
					return // no standalone stream on this server
				case resp.StatusCode == http.StatusNotFound && c.SessionID() != "":
					resp.Body.Close()
					c.fail(errors.New("the server ended the session (HTTP 404)"))
					return
				case resp.StatusCode >= 200 && resp.StatusCode <= 299:
					attempt = 0
					c.readEvents(resp.Body, nil)
				}
				resp.Body.Close()
			}
			select {
			case <-c.ctx.Done():
				return
			case <-time.After(restartDelay(min(attempt, 6))):
			}
		}
	}()
}

// Close ends the session (DELETE, best effort) and the connection.
func (c *streamableConn) Close() error {
	c.closeOnce.Do(func() {
		if id := c.SessionID(); id != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil)
			if err == nil {
				c.headers(req.Header)
				if resp, err := c.client.Do(req); err == nil {
					resp.Body.Close()
				}
			}
			cancel()
		}
		c.fail(io.EOF)
	})
	return nil
}

var _ mcp.Connection = (*streamableConn)(nil)
