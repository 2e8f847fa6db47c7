package proxy

import (
	"context"
	"time"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/guard"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/store"
)

// The reserved safety-loop operations (spec 8.5.4), on their spec
// endpoints. They are defined here once; routing, validation and
// introspection all read these definitions.
const (
	opExecuteAgent = "execute_agent"
	opRecordStep   = "record_execution_step"
	opComplete     = "complete_execution"
	opAbort        = "abort_execution"
	opConfirm      = "confirm_operation"
	opVerify       = "verify_challenge"
)

func str(name, desc string, required bool, aliases ...string) *aql.Param {
	return &aql.Param{Name: name, Types: []string{"string"}, Required: required, Description: desc, Aliases: aliases}
}

// LoopOperations returns the safety loop's operation definitions. mode is
// the configured loop mode; in disabled and logging modes the descriptions
// say the loop records without evaluating.
func LoopOperations(mode policy.LoopMode) []*catalog.Operation {
	note := ""
	switch mode {
	case policy.LoopDisabled:
		note = " The safety loop is disabled here: executions are tracked, nothing is evaluated."
	case policy.LoopLogging:
		note = " The safety loop is in logging mode here: steps are recorded, not evaluated."
	}
	lifecycle := map[string]any{"states": guard.States, "supports_cancel": true, "supports_retry": false, "progress_reporting": true}
	execution := func(required bool) []*aql.Param {
		return []*aql.Param{
			str("execution_id", "The execution, as execute_agent returned it", false),
			str("element_name", "The agent label given to execute_agent (used when execution_id is absent)", false),
		}
	}
	ops := []*catalog.Operation{
		{Name: opExecuteAgent, Category: policy.Execute, Lifecycle: lifecycle,
			Description: "Start a monitored execution of an agent: from now on report every intended action with record_execution_step before taking it." + note,
			Params: []*aql.Param{
				str("element_name", "A label for the agent being run (the principal itself is configured by the human)", true),
				{Name: "parameters", Types: []string{"object"}, Description: "Free-form parameters of the run; recorded, not interpreted"},
			},
			Returns: catalog.TypeInfo{Name: "ExecutionState", Kind: "object", Description: "execution_id, status, started_at"}},
		{Name: opRecordStep, Category: policy.Create,
			Description: "Report the next intended action (and how the previous one went) and get an AutonomyDirective: proceed only if continue is true; stop everything if stopped is true." + note,
			Params: []*aql.Param{
				str("element_name", "The agent reporting the step (as given to execute_agent)", true),
				str("next_action_hint", "The intended next action, specific enough to judge: tool, target, arguments", true, "nextActionHint"),
				str("step_description", "What the step just completed did", false, "stepDescription"),
				{Name: "outcome", Types: []string{"string"}, Enum: []any{"success", "failure", "skipped"},
					Description: "Result of the previous step; a failure pauses until a human confirms"},
				str("findings", "Data or observations from the completed step", false),
				str("execution_id", "The execution (default: the latest running one of element_name in this session)", false),
				str(catalog.TokenParam, "A token from an earlier pause of this same action, once a human approved it", false),
			},
			Returns: catalog.TypeInfo{Name: "AutonomyDirective", Kind: "object",
				Description: "continue, factors, stopped, reason, stepsRemaining, nextStepRisk, notifications"}},
		{Name: opComplete, Category: policy.Execute, Lifecycle: lifecycle,
			Description: "End an execution normally (running → completed).",
			Params:      append(execution(false), str("summary", "What the execution achieved", false)),
			Returns:     catalog.TypeInfo{Name: "ExecutionState", Kind: "object"}},
		{Name: opAbort, Category: policy.Execute, Lifecycle: lifecycle,
			Description: "End an execution abnormally, e.g. after a stop directive (running → cancelled). A block outlives it.",
			Params:      append(execution(false), str("reason", "Why the execution is aborted", false)),
			Returns:     catalog.TypeInfo{Name: "ExecutionState", Kind: "object"}},
		{Name: opConfirm, Category: policy.Execute,
			Description: "Ask the human again about a paused action, by its confirmation token. Only the human's answer approves; this call alone approves nothing.",
			Params:      []*aql.Param{str("token", "The confirmation_token of a CONFIRMATION_REQUIRED answer", true, "confirmation_token")},
			Returns:     catalog.TypeInfo{Name: "ConfirmResult", Kind: "object", Description: "token, status approved, what to do next"}},
		{Name: opVerify, Category: policy.Create,
			Description: "Submit the verification code a human read from the out-of-band dialog, to lift a block or a verification pause. The model never sees the code.",
			Params: []*aql.Param{
				{Name: "challenge_id", Types: []string{"string"}, Required: true, Aliases: []string{"verification_id", "verificationId"},
					Pattern: `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, Format: "uuid",
					Description: "The verification id from the block or pause (a UUID v4)"},
				{Name: "code", Types: []string{"string"}, Required: true, Sensitive: true, MinLength: intPtr(1), MaxLength: intPtr(128),
					Description: "The code as the human read it; case, spaces and hyphens do not matter"},
			},
			Returns: catalog.TypeInfo{Name: "VerifyResult", Kind: "object", Description: "verified, unblocked, resumed"}},
	}
	for _, op := range ops {
		op.Builtin = true
		op.Permissions = catalog.Permissions{Destructive: op.Category == policy.Execute}
		op.Examples = []catalog.Example{{Description: "Call " + op.Name, Request: exampleRequest(op)}}
	}
	return ops
}

func intPtr(n int) *int { return &n }

func exampleRequest(op *catalog.Operation) map[string]any {
	params := map[string]any{}
	for _, p := range op.Params {
		if !p.Required {
			continue
		}
		switch p.Name {
		case "challenge_id":
			params[p.Name] = "123e4567-e89b-42d3-a456-426614174000"
		case "next_action_hint":
			params[p.Name] = "calling fs_write_file on notes/todo.txt to add one line"
		case "token":
			params[p.Name] = "conf_0123456789abcdef0123456789abcdef"
		case "code":
			params[p.Name] = "ABCD-EFGH-..."
		default:
			params[p.Name] = "researcher"
		}
	}
	if op.Name == opComplete || op.Name == opAbort {
		params["execution_id"] = "exec_0123456789abcdef01234567"
	}
	return map[string]any{"operation": op.Name, "params": params}
}

// loopOperation answers the safety-loop operations.
func (f *Front) loopOperation(ctx context.Context, session string, op *catalog.Operation, p map[string]any) *aql.Result {
	s := func(name string) string { v, _ := p[name].(string); return v }
	loop := f.Guard
	switch op.Name {
	case opExecuteAgent:
		e, err := loop.ExecuteAgent(ctx, session, s("element_name"))
		return f.result(executionState(e), err)
	case opRecordStep:
		r := guard.Report{Session: session, ExecutionID: s("execution_id"),
			ElementName: s("element_name"), NextActionHint: s("next_action_hint"), StepDescription: s("step_description"),
			Outcome: s("outcome"), Findings: s("findings"), ConfirmationToken: s(catalog.TokenParam)}
		named, cat, _ := f.Catalog().ClassifyHint(r.NextActionHint)
		r.Category = cat
		if named != nil {
			r.Annotations = toolAnnotations(named.Tool.Annotations)
		}
		d, err := loop.RecordStep(ctx, r)
		return f.result(d, err)
	case opComplete, opAbort:
		if s("execution_id") == "" && s("element_name") == "" {
			return aql.Failure(&aql.Error{Code: aql.CodeMissingParam,
				Message: "Missing required parameter 'execution_id' (or 'element_name')",
				Details: map[string]any{"param_name": "execution_id", "operation": op.Name}})
		}
		status, reason := guard.StatusCompleted, s("summary")
		if op.Name == opAbort {
			status, reason = guard.StatusCancelled, s("reason")
		}
		e, err := loop.Finish(ctx, session, s("execution_id"), s("element_name"), status, reason)
		return f.result(executionState(e), err)
	case opConfirm:
		res, err := loop.ConfirmOperation(ctx, session, s("token"))
		return f.result(res, err)
	case opVerify:
		res, err := loop.VerifyChallenge(ctx, session, s("challenge_id"), s("code"))
		return f.result(res, err)
	}
	return aql.Failure(aql.NotFoundOperation(op.Name))
}

// ExecutionState is an execution's public state (spec 8.4.3).
type ExecutionState struct {
	ExecutionID string `json:"execution_id"`
	ElementName string `json:"element_name"`
	Status      string `json:"status"`
	StartedAt   string `json:"started_at,omitempty"`
	FinishedAt  string `json:"finished_at,omitempty"`
	Steps       int    `json:"steps_reported"`
	Reason      string `json:"reason,omitempty"`
}

func executionState(e store.Execution) ExecutionState {
	s := ExecutionState{ExecutionID: e.ID, ElementName: e.ElementName, Status: e.Status, Steps: e.Steps, Reason: e.Reason}
	if !e.StartedAt.IsZero() {
		s.StartedAt = e.StartedAt.Format(time.RFC3339)
	}
	if !e.FinishedAt.IsZero() {
		s.FinishedAt = e.FinishedAt.Format(time.RFC3339)
	}
	return s
}

// result is a loop operation's answer: its result, or the guard's
// refusal.
func (f *Front) result(v any, refusal *refusal.Refusal) *aql.Result {
	if refusal != nil {
		return refused(refusal, f.voice())
	}
	return aql.Success(v)
}

// voice is how this front's refusals address the model.
func (f *Front) voice() Voice { return VoiceFor(f.Mode, f.Guard.Channel) }

func (f *Front) channelName() string {
	if f.Guard.Channel == nil {
		return "none"
	}
	return f.Guard.Channel.Name()
}
