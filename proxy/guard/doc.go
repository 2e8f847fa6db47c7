// Package guard sits on the path of every call that reaches a downstream
// server and holds the execution safety loop of one aqlguard process: the
// principal's step count and pauses, executions and their notifications,
// confirmations bound to one action, verification challenges and the hard
// block. Proxied calls (Call, Read) and reported steps
// (record_execution_step) go through the same Check, so they share the
// evaluator, the principal's state and its step counter.
//
// A Guard is shaped like httputil.ReverseProxy: its collaborators are
// fields — State (the store), Channel (the human), Downstream (where allowed
// calls go), Evaluate, Now, Log — and a nil one has a defined meaning
// (documented on the field). One Guard serves every client session of a
// process; Downstream routes a call to its own session's server.
//
// The principal is the one the human configured (config agent or
// --agent); nothing the model sends changes it. A human answers through a
// verify.Channel; the model can ask for an answer (confirm_operation) but
// its own call never approves anything.
//
// Locking: Guard.mu guards the process's memory. It is held to read and
// to apply, never across a store read or commit or a human's answer, and
// never taken inside a store transaction. A call goes: read (the block,
// cached while the state generation does not move), decide (a pure
// function of what was read), ask the human if decide says so, commit
// (the decision, its audit record and what it changes, in one durable
// transaction), apply to memory, forward, record the outcome. What a
// decision changes is reserved while it commits (steps, approvals, a
// verify pause): other calls count the reservations, the principal's
// state changes only once the commit succeeded. Commits of one process
// copy what they write from memory in the order they commit
// (Guard.commitMu), so an older copy never overwrites a newer one.
//
// The guard needs three things of the store, behind the State interface:
// load a snapshot, commit the changes decided from one (a function of the
// snapshot that returns what to write, which a backend with optimistic
// transactions may run again), and append audit records; plus the
// generation that says whether anything changed since. bbolt is one
// backend (store.Store); a distributed one can replace it without the
// guard changing.
//
// Durable state lives in the store: the hard block (read at every check,
// so a block set by another process on the same state directory or before
// a restart applies at once), challenges, the failure budget,
// confirmations, executions and the audit chain. Every decision is
// written, with its audit record, before it is returned; when that fails
// the action is refused. Step counts, the failure pause and verify pauses
// are this process's own and end with it (spec 8.8.3 for verify pauses).
package guard
