// Package guard sits on the path of every call that reaches a downstream
// server and holds the execution safety loop of one aqlguard process: the
// principal's step count and pauses, executions and their notifications,
// confirmations bound to one action, verification challenges and the hard
// block. Proxied calls (Call: tool calls, resource reads and prompt
// gets, one entry point) and reported steps (record_execution_step) go
// through the same Check, so they share the evaluator, the principal's
// state and its step counter.
//
// The guard speaks its own language: what it refuses it returns as a
// Refusal (a kind, fixed words, named factors), never as a protocol's
// error; the fronts render it (proxy/refusal.go). It imports neither the
// MCP-AQL wire (proxy/aql) nor the relay nor the downstream side
// (imports_test.go).
//
// A Guard is shaped like httputil.ReverseProxy: its collaborators are
// fields — State (the store), Channel (the human), Evaluate, Now, Log —
// and a nil one has a defined meaning (documented on the field). One
// Guard serves every client session of a process; each call carries its
// own way on (Request.Forward, its session's), so nothing looks a
// session up again.
//
// What is a job of its own lives beside it: what it decides is
// proxy/ruling's (pure, table-tested), the human's questions and codes
// go through the principal's desk (proxy/desk, which the pins ask
// through too), what of a call is written down or shown is
// proxy/redact's, its refusals are proxy/refusal's, what operators see
// of a call is proxy/watch's and each session's flows are
// flows.Sessions'. Confirmations and the human's answers are
// proxy/confirm's, the challenges' codes proxy/challenge's, parking an
// idle guard proxy/parking's and a block decided while the state could
// not be written proxy/unwritten's; each reaches the guard through its
// commit, so every decision is still one commit of the guard's. The
// guard holds the executions and carries the rulings out.
//
// The principal is the one the human configured (config agent or
// --agent); nothing the model sends changes it. A human answers through a
// verify.Channel, by the desk; the model can ask for an answer
// (confirm_operation) but its own call never approves anything.
//
// One commit per decision: a call goes through one store.State.Commit
// per round, in which ruling.Decide (a pure function of the facts: the
// view the commit reads and the principal's memory) runs and the guard
// returns the changes that carry its ruling out, with the decision's
// audit record. Every other commit reads, calls its ruling and writes. Commits
// are serialised (one total order across every process on the state), so
// nothing can happen between a decision and its write: there is no
// re-ruling at commit time and nothing to reserve. The principal's memory
// (steps, the verify pause, the failure pause) changes only in the hook
// of a written commit (store.Changes.Then), in commit order. When decide
// asks for a human, the commit writes the question; the guard waits for
// the answer holding no lock, and the next commit decides again on the
// answer as the state holds it. Then the call is forwarded and its
// outcome recorded.
//
// Locking: Guard.mu guards the process's memory. It is held only to read
// or change it, never across a store read or commit or a human's answer;
// a commit's hook takes it under the store's lock, so it must never be
// held while waiting for the store. The desk's lock, flows.Sessions',
// parking.Lot's and unwritten.Hold's are leaves: they may be taken with Guard.mu held, never the other way.
//
// The guard watches the state's generation (State.Watch): a block set by
// any process reaches this process's running executions as danger_zone
// at once.
//
// Durable state lives in the store: the hard block (read at every check,
// so a block set by another process on the same state directory or before
// a restart applies at once), challenges, the failure budget,
// confirmations, executions and the audit chain. Every decision is
// written, with its audit record, before it is returned; when that fails
// the action is refused. Step counts, the failure pause and verify pauses
// are this process's own and end with it (spec 8.8.3 for verify pauses),
// except where serve drops an idle principal's guard: Park writes the
// step count and the failure pause to the state and the principal's next
// guard takes them over (Resume); a verify pause in force, a question on
// the human's screen or a code being shown keeps the guard (proxy/parking).
package guard
