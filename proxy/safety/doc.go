// Package safety is the execution safety loop of one aqlguard process: the
// principal's step count and pauses, executions and their notifications,
// confirmations bound to one action, verification challenges and the hard
// block. Proxied calls and reported steps (record_execution_step) go
// through the same Check, so they share the evaluator, the principal's
// state and its step counter.
//
// The principal is the one the human configured (config agent or
// --agent); nothing the model sends changes it. A human answers through a
// verify.Channel; the model can ask for an answer (confirm_operation) but
// its own call never approves anything.
//
// Locking: Loop.mu guards all state. It is never held while a human is
// being asked, so a pending dialog does not stall other calls.
//
// Until the store lands, blocks, challenges and confirmations live in
// memory and end with the process.
package safety
