// Package aql is the MCP-AQL protocol core: the request envelope, payload
// limits, parameter validation, field selection and the discriminated
// result. It knows nothing about downstream servers, nor of the policy
// but its configured limits (policy.Limits); the catalog hands it
// parameter definitions and the front hands it raw requests.
package aql

import (
	"fmt"
	"strings"
)

// Code is a machine-readable MCP-AQL error code (error-codes.md).
type Code string

// The codes aqlguard emits. The registry's own codes come first; the
// PERMISSION_* additions are the ones DESIGN.md names for the safety tiers.
const (
	CodeMissingParam      Code = "VALIDATION_MISSING_PARAM"
	CodeInvalidType       Code = "VALIDATION_INVALID_TYPE"
	CodeUnknownParam      Code = "VALIDATION_UNKNOWN_PARAM"
	CodeInvalidEncoding   Code = "VALIDATION_INVALID_ENCODING"
	CodePayloadTooLarge   Code = "VALIDATION_PAYLOAD_TOO_LARGE"
	CodeEndpointMismatch  Code = "VALIDATION_ENDPOINT_MISMATCH"
	CodeInvalidEnum       Code = "VALIDATION_INVALID_ENUM"
	CodeOutOfRange        Code = "VALIDATION_OUT_OF_RANGE"
	CodePatternMismatch   Code = "VALIDATION_PATTERN_MISMATCH"
	CodeNotFoundOperation Code = "NOT_FOUND_OPERATION"
	CodeNotFoundResource  Code = "NOT_FOUND_RESOURCE"
	CodePermissionDenied  Code = "PERMISSION_DENIED"
	CodeConfirmation      Code = "CONFIRMATION_REQUIRED"
	CodeAgentBlocked      Code = "PERMISSION_AGENT_BLOCKED"
	CodeVerification      Code = "PERMISSION_VERIFICATION_REQUIRED"
	CodeRateLimit         Code = "RATE_LIMIT_EXCEEDED"
	CodeVerifyFailed      Code = "PERMISSION_VERIFICATION_FAILED"
	CodeTokenInvalid      Code = "TOKEN_INVALID"
	CodeTokenExpired      Code = "TOKEN_EXPIRED"
	CodeTokenUsed         Code = "TOKEN_ALREADY_USED"
	CodeTokenScope        Code = "TOKEN_SCOPE_MISMATCH"
	CodeInvalidState      Code = "CONFLICT_INVALID_STATE"
	CodeInternal          Code = "INTERNAL_ERROR"
)

// Error is the structured error of a failed operation. Message is shown to
// the model, so it is written from fixed templates and never carries Go
// error text, paths or type names (spec 8.1.3): internal causes go to the log.
type Error struct {
	Code    Code           `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf builds an Error; details may be nil.
func Errorf(code Code, details map[string]any, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Details: details}
}

// MissingParam reports an absent required parameter.
func MissingParam(op string, p *Param) *Error {
	msg := fmt.Sprintf("Missing required parameter '%s'", p.Name)
	if p.Type != "" {
		if p.Description != "" {
			msg += fmt.Sprintf(". Expected: %s (%s)", p.Type, firstSentence(p.Description))
		} else {
			msg += ". Expected: " + p.Type
		}
	}
	return &Error{Code: CodeMissingParam, Message: msg,
		Details: map[string]any{"param_name": p.Name, "operation": op}}
}

// InvalidType reports a value of the wrong JSON type.
func InvalidType(name, expected, actual string, value any) *Error {
	d := map[string]any{"param_name": name, "expected_type": expected, "actual_type": actual}
	if value != nil {
		d["value"] = value
	}
	return &Error{Code: CodeInvalidType,
		Message: fmt.Sprintf("Parameter '%s' expected '%s', got '%s'", name, expected, actual), Details: d}
}

// UnknownParams reports parameters the operation does not define.
func UnknownParams(op string, unknown, valid []string) *Error {
	return &Error{Code: CodeUnknownParam,
		Message: fmt.Sprintf("Unknown parameter(s) for operation '%s': %s", op, strings.Join(unknown, ", ")),
		Details: map[string]any{"operation": op, "unknown_params": unknown, "valid_params": valid}}
}

// NotFoundOperation reports an operation name the catalog does not hold.
func NotFoundOperation(op string) *Error {
	return &Error{Code: CodeNotFoundOperation,
		Message: fmt.Sprintf("Unknown operation: '%s'. Use introspect to discover supported operations.", op),
		Details: map[string]any{"operation": op}}
}

// EndpointMismatch reports an operation sent to the wrong endpoint family.
func EndpointMismatch(op, expectedTool, actualTool, expected, actual string) *Error {
	return &Error{Code: CodeEndpointMismatch,
		Message: fmt.Sprintf("Operation '%s' must be called via %s, not %s", op, expectedTool, actualTool),
		Details: map[string]any{"operation": op, "expected_endpoint": expected, "actual_endpoint": actual,
			"expected_tool": expectedTool}}
}

// LimitKind names a payload limit (error-codes.md 4.7).
type LimitKind string

const (
	LimitRequestSize   LimitKind = "request_size"
	LimitResponseSize  LimitKind = "response_size"
	LimitStringLength  LimitKind = "string_length"
	LimitArrayElements LimitKind = "array_elements"
	LimitNestingDepth  LimitKind = "nesting_depth"
)

func (k LimitKind) unit() string {
	switch k {
	case LimitArrayElements:
		return "elements"
	case LimitNestingDepth:
		return "levels"
	}
	return "bytes"
}

// TooLarge reports an exceeded payload limit; location may be empty.
func TooLarge(kind LimitKind, limit, actual int64, location string) *Error {
	d := map[string]any{"limit_type": string(kind), "limit_value": limit, "actual_value": actual, "unit": kind.unit()}
	if location != "" {
		d["location"] = location
	}
	return &Error{Code: CodePayloadTooLarge,
		Message: fmt.Sprintf("Payload exceeds %s limit of %d", kind, limit), Details: d}
}

// InvalidEncoding reports bytes that are not valid UTF-8 (spec 4.7.1).
func InvalidEncoding(location string, offset int) *Error {
	d := map[string]any{"byte_offset": offset}
	if location != "" {
		d["location"] = location
	}
	return &Error{Code: CodeInvalidEncoding, Message: "Invalid character encoding in request", Details: d}
}

// Internal is the one error for failures whose cause must stay in the log.
func Internal(description string) *Error {
	return &Error{Code: CodeInternal, Message: fmt.Sprintf("Internal error: '%s'", description)}
}

func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\n"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSuffix(s, ".")
}
