package forward

import (
	"fmt"
	"log/slog"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/internal/registry"
	"github.com/aqlguard/aqlguard/store"
)

// SinkFunc makes the sink of one [audit.forward] table. state is the
// state's id (StateID), for a sink that names where records come from;
// product names aqlguard in the records that carry it.
type SinkFunc func(cfg *config.Forward, state, product string) (Sink, error)

// Destinations register themselves by name ([audit.forward] to): this
// package registers "syslog", "otlp", "splunk" and "file"; a new one is
// a package that calls Register from an init function, imported (blank)
// where the process is assembled (package app), with the name and its
// settings in package config.
var sinks = registry.Of[SinkFunc]{Kind: "to"}

// Register makes a destination available under name. Registering a
// name twice is a mistake of the build, which New reports.
func Register(name string, newSink SinkFunc) { sinks.Register(name, newSink) }

// Destinations are the registered destinations' names, sorted.
func Destinations() []string { return sinks.Names() }

func init() {
	Register("syslog", func(cfg *config.Forward, state, _ string) (Sink, error) {
		sink, err := NewSyslogSink(cfg.Address, cfg.CAFile, state)
		if s, ok := sink.(*Syslog); ok {
			s.Settle = cfg.AssumeDeliveredAfter.Duration
		}
		return sink, err
	})
	for _, to := range []string{"otlp", "splunk"} {
		Register(to, func(cfg *config.Forward, state, _ string) (Sink, error) {
			return NewHTTP(cfg.To, cfg.URL, cfg.Headers, cfg.CAFile, state)
		})
	}
	Register("file", func(cfg *config.Forward, _, product string) (Sink, error) {
		return &File{Path: cfg.Path, Product: product}, nil
	})
}

// New builds the forwarder [audit.forward] describes, reading st's audit
// chain and keeping its cursors in st (the state directory, or the
// PostgreSQL state every replica shares: one of them forwards).
func New(cfg *config.Forward, st store.State, product string, log *slog.Logger) (*Forwarder, error) {
	newSink, err := sinks.Lookup(cfg.To)
	var sink Sink
	if err == nil {
		sink, err = newSink(cfg, st.StateID(), product)
	}
	if err != nil {
		return nil, fmt.Errorf("[audit.forward]: %w", err)
	}
	return &Forwarder{Log: st.AuditReader(), Cursors: st.Cursors(), Sink: sink,
		Batch: cfg.Batch, Newest: cfg.Start == "newest", Logger: log}, nil
}
