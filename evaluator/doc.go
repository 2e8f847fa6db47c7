// Package evaluator decides what happens to one action: the five-stage
// autonomy evaluation of MCP-AQL 8.7.2. It is pure and deterministic:
// [Evaluate] reads a compiled policy and a [Step] and returns a
// [Directive]; it does no I/O, reads no clock and changes no shared state,
// so the guard can call it concurrently and tests can replay it.
//
// # Pipeline
//
// Stages run in order; the first that pauses or stops ends evaluation.
//
//  1. Step limit: StepNumber > max_autonomous_steps pauses for a human
//     check-in (Decision confirm, Reason "Step limit exceeded").
//  2. Previous outcome: an outcome of "failure" pauses (Reason "Previous
//     step failed").
//  3. Patterns, matched as documented in package policy against the
//     operation name, the server-qualified name server.tool and the action
//     hint, plus argument rules. deny > requires_approval > auto_approve:
//     deny blocks (Stopped, Decision block, tier danger_zone, risk 100),
//     requires_approval pauses for confirmation (tier confirm), auto_approve
//     allows and skips stages 4 and 5. Matched holds the pattern or rule.
//  4. Safety tier from [Risk]: 0-30 advisory, 31-60 confirm, 61-85 verify
//     (pause for out-of-band verification), 86-100 danger_zone (block).
//  5. Risk tolerance: an advisory or confirm action whose risk is above the
//     policy threshold (conservative 25, moderate 30, aggressive 40) pauses
//     for confirmation; otherwise it is allowed. No tolerance lets the
//     destructive band of the confirm tier (41-60) run unasked.
//
// Risk and Tier are set only by the stages that compute them (3 for deny
// and requires_approval, 4 onwards); they are zero after stages 1 and 2 and
// after auto_approve. Factors always explains every stage that ran.
//
// # Loop modes
//
// enforcing: the directive is authoritative (Enforced). monitoring: the
// full evaluation runs and Decision, Reason, Tier and Risk say what
// enforcing would have done, but Continue is true and Stopped false, and a
// final factor "monitoring: enforcing would have <decision> (<reason>)"
// records it. logging and disabled: nothing is evaluated; Continue, Decision
// allow, Stage not_evaluated. An unknown mode is treated as enforcing, and a
// nil policy pauses every step.
//
// # Risk score
//
// Adjustments apply in this order, each recorded as a factor; the result is
// clamped to 0-100.
//
//	base by category      READ 10, CREATE 25, UPDATE 40, EXECUTE 45,
//	                      DELETE 55; none or unknown 45 (as EXECUTE)
//	readOnlyHint true     lower to at most 10, except for DELETE
//	destructiveHint true  raise to at least 50
//	openWorldHint true    add 5
//	safe name             get_*, list_*, search_*, count_*, check_*,
//	                      introspect*: cap at 15, unless destructiveHint is
//	                      true or the category is DELETE
//	dangerous name        force_*, *_permanently, bulk_delete*, override_*,
//	                      bypass_*, *_without_backup, purge_*: at least 70
//	forbidden name        drop_*, delete_all*, truncate_*, reset_*,
//	                      destroy_*, wipe_*, *_production: at least 90
//	risk rule             at least rule.score when it matches
//
// Name patterns (danger-levels.md 6.1-6.3) are tried on the tool name,
// snake-cased (dropTable and drop-table become drop_table), and on the
// operation name; since the most dangerous class is applied last, a name
// that is both safe and forbidden (get_production) counts as forbidden.
// Risk rules without an argument match the same subjects as stage 3; with
// one, that argument's value.
package evaluator
