package downstream

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
)

// lineLogger is an io.Writer that logs each complete line a downstream
// server writes to its stderr. Overlong lines are cut so a chatty server
// cannot grow our memory without bound. The last lines are kept for
// the cause of a failed start (cause.go).
type lineLogger struct {
	mu   sync.Mutex
	log  *slog.Logger
	buf  []byte
	tail []string
	// onLine, when set, is given each line too (the sandbox's watch).
	onLine func(line string)
}

const maxStderrLine = 8 << 10

func newLineLogger(log *slog.Logger) *lineLogger { return &lineLogger{log: log} }

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) > maxStderrLine {
				l.emit(l.buf[:maxStderrLine])
				l.buf = l.buf[:0]
			}
			return len(p), nil
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

func (l *lineLogger) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(line) > maxStderrLine {
		line = line[:maxStderrLine]
	}
	l.log.Log(context.Background(), slog.LevelInfo, "downstream stderr", "line", string(line))
	if l.onLine != nil {
		l.onLine(string(line))
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	if len(l.tail) == tailLines {
		l.tail = append(l.tail[:0], l.tail[1:]...)
	}
	l.tail = append(l.tail, string(line[:min(len(line), 2*maxCause)]))
}
