// Package app assembles one aqlguard process for cmd/aqlguard: the
// state the configuration names, the channel to the human, the guard,
// the servers and the audit forwarder, started and closed in order.
// cmd/aqlguard parses flags, makes the logger and calls Start; the
// Instance it returns is what run and serve serve from (its guard and
// relay configuration, the principals serve makes and drops, reloads,
// metrics and readiness), closed in order by Close.
//
// The parts a configuration names by kind register themselves where
// they live (store.RegisterBackend, verify.RegisterChannel,
// forward.Register); the ones that live in packages of their own are
// imported here, blank (parts.go), so a new backend, channel or audit
// destination is one package and one line there, and nothing in the
// assembly lists them in a switch.
package app
