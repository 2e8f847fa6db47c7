package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

// entry is one line of the call log.
type entry struct {
	Method    string          `json:"method"`
	Name      string          `json:"name,omitempty"`
	URI       string          `json:"uri,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// callLog appends one JSON line per entry and fsyncs it. A nil *callLog
// records nothing.
type callLog struct {
	mu sync.Mutex
	f  *os.File
}

func openCallLog(path string) (*callLog, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the call log: %w", err)
	}
	return &callLog{f: f}, nil
}

func (l *callLog) record(e entry) error {
	if l == nil {
		return nil
	}
	switch {
	case len(e.Arguments) == 0, string(e.Arguments) == "null":
		e.Arguments = nil
	case !json.Valid(e.Arguments):
		e.Arguments, _ = json.Marshal(string(e.Arguments)) // the line stays JSON
	}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		return err
	}
	return l.f.Sync()
}
