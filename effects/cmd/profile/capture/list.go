package capture

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// ProtocolVersion is the revision the guard speaks to servers of the
// older handshake (proxy/downstream.ProtocolVersion).
const ProtocolVersion = "2025-11-25"

// AllCapabilities are what a full client declares. Some servers list
// tools only to a client that can answer them (the everything server's
// get-roots-list, trigger-sampling-request, trigger-elicitation-request
// and their task variants), and the guard passes its client's
// capabilities on, so a profile must know every tool a server lists to
// any client.
const AllCapabilities = `{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{},"url":{}},` +
	`"tasks":{"list":{},"cancel":{},"requests":{"sampling":{"createMessage":{}},"elicitation":{"create":{}}}}}`

// ListTools runs argv as a stdio MCP server (env added to this process's
// environment), initializes it declaring caps, pages through tools/list
// and returns its tools as sent, with its serverInfo. The server is
// spoken to in raw JSON-RPC so nothing it sends is dropped or reordered
// by a decoder; whatever it asks meanwhile is answered "method not
// found".
func ListTools(ctx context.Context, argv, env []string, caps json.RawMessage) (*Capture, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	defer func() {
		// EOF on stdin ends a stdio server; one that lingers (the
		// everything server keeps timers) is killed after a second.
		in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	p := &peer{in: in, out: bufio.NewReaderSize(out, 1<<20)}
	c, err := p.list(caps)
	if err != nil {
		return nil, fmt.Errorf("%w\nthe server's stderr:\n%s", err, stderr.String())
	}
	return c, nil
}

// peer is one JSON-RPC connection over newline-delimited stdio.
type peer struct {
	in   io.Writer
	out  *bufio.Reader
	next int
}

type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

func (p *peer) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = p.in.Write(append(b, '\n'))
	return err
}

// call sends a request and returns its result, answering whatever the
// server asks meanwhile with "method not found" and passing over its
// notifications.
func (p *peer) call(method string, params any) (json.RawMessage, error) {
	p.next++
	id := p.next
	if err := p.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	for {
		line, err := p.out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: reading the answer: %w", method, err)
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("%s: the server wrote something that is not JSON-RPC: %.200q", method, line)
		}
		switch {
		case m.Method != "" && m.ID != nil:
			if err := p.send(map[string]any{"jsonrpc": "2.0", "id": m.ID,
				"error": map[string]any{"code": -32601, "message": "method not found"}}); err != nil {
				return nil, err
			}
		case m.Method != "":
			// a notification (a log message): nothing to do
		case string(m.ID) == fmt.Sprint(id):
			if m.Error != nil {
				return nil, fmt.Errorf("%s: the server answered %s", method, m.Error)
			}
			return m.Result, nil
		}
	}
}

func (p *peer) list(caps json.RawMessage) (*Capture, error) {
	raw, err := p.call("initialize", map[string]any{
		"protocolVersion": ProtocolVersion,
		"capabilities":    caps,
		"clientInfo":      map[string]any{"name": "aqlguard-profile", "version": "0"},
	})
	if err != nil {
		return nil, err
	}
	var init struct {
		ProtocolVersion string          `json:"protocolVersion"`
		ServerInfo      json.RawMessage `json:"serverInfo"`
	}
	if err := json.Unmarshal(raw, &init); err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if err := p.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		return nil, err
	}
	c := &Capture{ServerInfo: init.ServerInfo, Protocol: ProtocolVersion, Capabilities: caps}
	if init.ProtocolVersion != ProtocolVersion {
		c.Protocol += " (the server answered " + init.ProtocolVersion + ")"
	}
	var cursor *string
	for page := 0; ; page++ {
		if page == 100 {
			return nil, errors.New("tools/list: more than 100 pages")
		}
		params := map[string]any{}
		if cursor != nil {
			params["cursor"] = *cursor
		}
		raw, err := p.call("tools/list", params)
		if err != nil {
			return nil, err
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor *string           `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		c.Tools = append(c.Tools, res.Tools...)
		if res.NextCursor == nil || *res.NextCursor == "" {
			return c, nil
		}
		cursor = res.NextCursor
	}
}
