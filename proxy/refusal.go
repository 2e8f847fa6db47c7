package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/proxy/challenge"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/verify"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The guard says no in its own terms (refusal.Refusal: a kind, fixed
// words, named factors); this file is the one place that says it on the
// wire, for every front:
//
//   - an MCP-AQL endpoint (semantic, single): refused, the failure
//     result, with the top-level confirmation of a pending one;
//   - transparent and passthrough tools: the same result as the tool's
//     text, with isError (Front.wire);
//   - resources/read and prompts/get: refusedRPC, a JSON-RPC error
//     (CodeRefused) whose data is that result;
//   - arguments a transparent tool does not take, before the guard:
//     argumentsRefused, a tool error of one sentence, as a tool's own
//     error reads (the model there speaks the tool's schema, not
//     MCP-AQL).
//
// What varies by mode and channel (the tools the model has, how the human
// was reached) is the Voice, so the words match what the model and the
// human see.

// Voice is how a refusal addresses the model: the calls it can make and
// how the human was reached.
type Voice struct {
	// Verify says how the model passes a verification code on, as an
	// instruction ("call the tool aqlguard_verify_challenge with
	// challenge_id and code").
	Verify string
	// Confirm says how it asks the human again about a confirmation
	// token; "" where it has no confirm_operation (transparent mode).
	Confirm string
	// Channel is how the human is reached: "dialog" or "command".
	Channel string
	// VerifyTool names, for the human, where the model passes a code
	// ("aqlguard_verify_challenge", "mcp_aql_create, operation
	// verify_challenge"): guard.Guard.VerifyTool.
	VerifyTool string
}

// VoiceFor is how refusals address the model in mode: the tools that
// carry verify_challenge and confirm_operation there, and the channel
// through which the human is reached (nil: none).
func VoiceFor(mode Mode, ch verify.Channel) Voice {
	v := Voice{Verify: "call the tool aqlguard_verify_challenge with challenge_id and code",
		VerifyTool: challenge.TransparentVerifyTool}
	if mode != ModeTransparent {
		endpoint := func(name string) string {
			if mode == ModeSingle || mode == ModePassthrough {
				return SingleTool
			}
			for _, op := range LoopOperations(policy.LoopEnforcing) {
				if op.Name == name {
					return semanticTool(op.Category)
				}
			}
			return SingleTool
		}
		v = Voice{
			Verify:     "call " + endpoint("verify_challenge") + " with operation verify_challenge, params challenge_id and code",
			Confirm:    "call " + endpoint("confirm_operation") + " with operation confirm_operation and the token",
			VerifyTool: endpoint("verify_challenge") + ", operation verify_challenge",
		}
	}
	if ch != nil {
		v.Channel = ch.Name()
	}
	return v
}

// reached says how aqlguard reached the human: "aqlguard showed them
// in a window" (did, the verb for a dialog), "aqlguard sent them through
// its approval channel" (sent, the verb for a command).
func (v Voice) reached(did, sent string) string {
	switch v.Channel {
	case "dialog":
		return "aqlguard " + did + " them in a window"
	case "command":
		return "aqlguard " + sent + " them through its approval channel"
	}
	return "aqlguard " + did + " them"
}

// refusalCodes are the MCP-AQL codes of the guard's refusals.
var refusalCodes = map[refusal.Kind]aql.Code{
	refusal.Blocked: aql.CodeAgentBlocked, refusal.Paused: aql.CodeVerification,
	refusal.Pending: aql.CodeConfirmation, refusal.Denied: aql.CodePermissionDenied,
	refusal.Refused: aql.CodePermissionDenied, refusal.Checkins: aql.CodePermissionDenied,
	refusal.ToolChanged: aql.CodePermissionDenied, refusal.ToolReview: aql.CodePermissionDenied, refusal.TokenInvalid: aql.CodeTokenInvalid,
	refusal.TokenExpired: aql.CodeTokenExpired, refusal.TokenUsed: aql.CodeTokenUsed,
	refusal.TokenScope: aql.CodeTokenScope, refusal.RateLimited: aql.CodeRateLimit,
	refusal.VerifyFailed: aql.CodeVerifyFailed, refusal.NotFound: aql.CodeNotFoundResource,
	refusal.Conflict: aql.CodeInvalidState, refusal.Failed: aql.CodeInternal,
}

// refusalError is r as an MCP-AQL error in voice v: the kind's code, the
// words with their {names} filled (in one pass, so a factor's value is
// never read as a name), the factors as details. A factor that is not
// a string, an int or a bool is not said: the refusal becomes an
// internal error (a Go error must never reach the model).
func refusalError(r *refusal.Refusal, v Voice) *aql.Error {
	code, ok := refusalCodes[r.Kind]
	if !ok {
		return aql.Internal("a refusal of an unknown kind")
	}
	confirm := ""
	if v.Confirm != "" {
		confirm = " Or " + v.Confirm + " to wait for it."
	}
	verify := v.Verify
	if verify == "" {
		verify = "call verify_challenge with challenge_id and code"
	}
	fill := []string{"{shown}", v.reached("showed", "sent"), "{asked}", v.reached("asked", "asked"),
		"{verify}", verify, "{confirm}", confirm}
	var details map[string]any
	for name, val := range r.Factors {
		switch val.(type) {
		case string, int, bool:
		default:
			return aql.Internal("a refusal could not be said")
		}
		fill = append(fill, "{"+name+"}", fmt.Sprint(val))
		if details == nil {
			details = make(map[string]any, len(r.Factors))
		}
		details[name] = val
	}
	return &aql.Error{Code: code, Message: strings.NewReplacer(fill...).Replace(r.Say), Details: details}
}

// refused is r as an MCP-AQL failure: the error, and for a pending
// confirmation the result's top-level confirmation (confirmation-tokens.md:
// the token and its expiry, nothing else).
func refused(r *refusal.Refusal, v Voice) *aql.Result {
	res := aql.Failure(refusalError(r, v))
	if o := r.Offer(); o != nil {
		res.Confirmation = &aql.Confirmation{Token: o.Token, ExpiresAt: o.ExpiresAt}
	}
	return res
}

// CodeRefused is the JSON-RPC error code of a resources/read or a
// prompts/get that aqlguard refused; the MCP-AQL failure (code, message,
// details, a confirmation token) is the error's data.
const CodeRefused = -32001

// refusedRPC is r as the JSON-RPC error of a refused resources/read or
// prompts/get.
func refusedRPC(r *refusal.Refusal, v Voice) *jsonrpc.Error {
	res := refused(r, v)
	data, _ := json.Marshal(res)
	return &jsonrpc.Error{Code: CodeRefused, Message: "aqlguard: " + res.Err.Message, Data: data}
}

// argumentsRefused is a transparent tool call whose arguments aqlguard
// refused before judging them (aql.ParseArguments, aql.CheckArguments):
// a tool error whose text is one sentence the model can act on, naming
// what is wrong and what the tool takes. Names are said as Quoted says
// them (a lookalike shows its escapes).
func argumentsRefused(tool string, e *aql.Error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: argumentsSentence(tool, e)}}}
}

func argumentsSentence(tool string, e *aql.Error) string {
	const not = "aqlguard did not send this call: "
	name := aql.Quoted(tool)
	param, _ := e.Details["param_name"].(string)
	switch e.Code {
	case aql.CodeUnknownParam:
		unknown, _ := e.Details["unknown_params"].([]string)
		valid, _ := e.Details["valid_params"].([]string)
		what := "an argument"
		if len(unknown) > 1 {
			what = "arguments"
		}
		takes := "it takes no arguments"
		switch obj, _ := e.Details["object"].(string); {
		case obj != "" && len(valid) == 0:
			takes = aql.Quoted(obj) + " takes no members"
		case obj != "":
			takes = aql.Quoted(obj) + " takes " + aql.QuotedList(valid, 20)
		case len(valid) > 0:
			takes = "it takes " + aql.QuotedList(valid, 20)
		}
		return fmt.Sprintf("%s%s does not declare %s %s; %s.", not, name, what, aql.QuotedList(unknown, 20), takes)
	case aql.CodeInvalidType:
		expected, _ := e.Details["expected_type"].(string)
		actual, _ := e.Details["actual_type"].(string)
		switch {
		case e.Details["duplicate"] == true:
			return fmt.Sprintf("%sthe argument %s is given more than once; send each argument once.", not, aql.Quoted(param))
		case param == "arguments" && actual == "invalid JSON":
			return fmt.Sprintf("%sthe arguments of %s are not one valid JSON object.", not, name)
		case param == "arguments":
			return fmt.Sprintf("%sthe arguments of %s must be a JSON object, not %s.", not, name, typeWords(actual))
		}
		return fmt.Sprintf("%sthe argument %s of %s must be %s, not %s.", not, aql.Quoted(param), name, typeWords(expected), typeWords(actual))
	}
	msg := strings.TrimSuffix(e.Message, ".")
	if r, size := utf8.DecodeRuneInString(msg); unicode.IsUpper(r) {
		msg = string(unicode.ToLower(r)) + msg[size:]
	}
	return not + msg + "."
}

// typeWords says JSON types ("integer | null", as aql renders them) in
// words: "an integer or null".
func typeWords(types string) string {
	article := map[string]string{"integer": "an integer", "number": "a number", "string": "a string",
		"boolean": "a boolean", "array": "an array", "object": "an object", "null": "null"}
	parts := strings.Split(types, " | ")
	for i, t := range parts {
		if w, ok := article[t]; ok {
			parts[i] = w
		}
	}
	return strings.Join(parts, " or ")
}

// RefusalText is r's words in voice v, as a transparent tool's error
// says them: what a client's hook gives the model as its reason
// (package hook).
func RefusalText(r *refusal.Refusal, v Voice) string { return refusalError(r, v).Message }
