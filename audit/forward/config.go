package forward

import (
	"fmt"
	"log/slog"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/store"
)

// New builds the forwarder [audit.forward] describes, reading st's audit
// chain and keeping its cursors in st (the state directory, or the
// PostgreSQL state every replica shares: one of them forwards).
func New(cfg *config.Forward, st store.State, product string, log *slog.Logger) (*Forwarder, error) {
	state := st.StateID()
	var sink Sink
	var err error
	switch cfg.To {
	case "syslog":
		sink, err = NewSyslogSink(cfg.Address, cfg.CAFile, state)
		if s, ok := sink.(*Syslog); ok {
			s.Settle = cfg.AssumeDeliveredAfter.Duration
		}
	case "otlp", "splunk":
		sink, err = NewHTTP(cfg.To, cfg.URL, cfg.Headers, cfg.CAFile, state)
	case "file":
		sink = &File{Path: cfg.Path, Product: product}
	default:
		err = fmt.Errorf("unknown destination %q", cfg.To)
	}
	if err != nil {
		return nil, fmt.Errorf("[audit.forward]: %w", err)
	}
	return &Forwarder{Log: st.AuditReader(), Cursors: st.Cursors(), Sink: sink,
		Batch: cfg.Batch, Newest: cfg.Start == "newest", Logger: log}, nil
}
