package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// serveStorm is a server that sends notifications/tools/list_changed in a
// loop, as fast as its output takes them (aqlguard must coalesce them,
// issue 19). The SDK debounces list changes, so this one speaks JSON-RPC
// over stdio itself: initialize, ping, tools/list and tools/call of
//
//	storm {count, flip}  send count list_changed (0: until storm_stop), in
//	                     the background; flip: each tools/list alternates
//	                     echo's description (every listing is a change)
//	storm_stop           stop sending
//	stats                {"tools_list": listings served, "sent": notifications sent, "storming": bool}
//	echo {message}       the message
func serveStorm(in io.Reader, out io.Writer) error {
	s := &storm{out: bufio.NewWriter(out)}
	dec := json.NewDecoder(bufio.NewReader(in))
	for {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := dec.Decode(&msg); err != nil {
			if err == io.EOF {
				s.stop.Store(true)
				return nil
			}
			return err
		}
		if msg.ID == nil {
			continue // a notification
		}
		result, rpcErr := s.serve(msg.Method, msg.Params)
		resp := map[string]any{"jsonrpc": "2.0", "id": msg.ID}
		if rpcErr != nil {
			resp["error"] = rpcErr
		} else {
			resp["result"] = result
		}
		if err := s.write(resp); err != nil {
			return err
		}
	}
}

type storm struct {
	mu       sync.Mutex // out
	out      *bufio.Writer
	listings atomic.Int64
	sent     atomic.Int64
	storming atomic.Bool
	stop     atomic.Bool
	flip     atomic.Bool
}

func (s *storm) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.out.Write(append(b, '\n')); err != nil {
		return err
	}
	return s.out.Flush()
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (s *storm) serve(method string, params json.RawMessage) (any, *rpcError) {
	switch method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(params, &p)
		if p.ProtocolVersion == "" {
			p.ProtocolVersion = "2025-11-25"
		}
		return map[string]any{"protocolVersion": p.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{"listChanged": true}},
			"serverInfo": map[string]any{"name": "storm", "version": "1.0.0"}}, nil
	case "ping":
		return map[string]any{}, nil
	case "tools/list":
		n := s.listings.Add(1)
		desc := "Return message unchanged."
		if s.flip.Load() && n%2 == 0 {
			desc = "Return message unchanged (again)."
		}
		obj := map[string]any{"type": "object"}
		return map[string]any{"tools": []any{
			map[string]any{"name": "echo", "description": desc, "inputSchema": map[string]any{"type": "object",
				"properties": map[string]any{"message": map[string]any{"type": "string"}}}},
			map[string]any{"name": "storm", "description": "Send list_changed in a loop.", "inputSchema": map[string]any{"type": "object",
				"properties": map[string]any{"count": map[string]any{"type": "integer"}, "flip": map[string]any{"type": "boolean"}}}},
			map[string]any{"name": "storm_stop", "description": "Stop the loop.", "inputSchema": obj},
			map[string]any{"name": "stats", "description": "Listings served, notifications sent.", "inputSchema": obj},
		}}, nil
	case "tools/call":
		var p struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &rpcError{-32602, err.Error()}
		}
		return s.call(p.Name, p.Arguments), nil
	}
	return nil, &rpcError{-32601, "method not found: " + method}
}

func (s *storm) call(name string, a map[string]any) any {
	text := func(t string) any { return map[string]any{"content": []any{map[string]any{"type": "text", "text": t}}} }
	switch name {
	case "echo":
		return text(str(a, "message"))
	case "storm":
		count, _ := num(a, "count")
		flip, _ := a["flip"].(bool)
		s.flip.Store(flip)
		if !s.storming.CompareAndSwap(false, true) {
			return text("already storming")
		}
		s.stop.Store(false)
		go s.loop(int64(count))
		return text("storming")
	case "storm_stop":
		s.stop.Store(true)
		return text("stopping")
	case "stats":
		b, _ := json.Marshal(map[string]any{"tools_list": s.listings.Load(), "sent": s.sent.Load(), "storming": s.storming.Load()})
		return text(string(b))
	}
	return map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "unknown tool " + name}}}
}

// loop sends list_changed until count are sent (0: until stopped).
func (s *storm) loop(count int64) {
	defer s.storming.Store(false)
	note := map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
	for !s.stop.Load() && (count == 0 || s.sent.Load() < count) {
		if err := s.write(note); err != nil {
			fmt.Fprintln(os.Stderr, "storm:", err)
			return
		}
		s.sent.Add(1)
	}
}
