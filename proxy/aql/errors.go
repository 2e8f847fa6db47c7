// Package aql is the MCP-AQL protocol core: the request envelope, payload
// limits, parameter validation, field selection and the discriminated
// result. It knows nothing about downstream servers, nor of the policy
// but its configured limits (config.Limits); the catalog hands it
// parameter definitions and the front hands it raw requests.
package aql

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
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
		Message: fmt.Sprintf("Parameter '%s' expected '%s', got '%s'", Quoted(name), expected, actual), Details: d}
}

// UnknownParams reports parameters the operation does not define.
func UnknownParams(op string, unknown, valid []string) *Error {
	return &Error{Code: CodeUnknownParam,
		Message: fmt.Sprintf("Unknown parameter(s) for operation '%s': %s", op, QuotedList(unknown, maxNamesSaid)),
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

// DuplicateMember reports an object that names a member twice (location
// is the member's path, "path" or "options.force"): the decoder would
// keep one of the values, a server might read the other.
func DuplicateMember(location string) *Error {
	return &Error{Code: CodeInvalidType,
		Message: fmt.Sprintf("Parameter '%s' is given more than once; send each parameter once", Quoted(location)),
		Details: map[string]any{"param_name": location, "expected_type": "object with unique member names",
			"actual_type": "object naming a member twice", "duplicate": true}}
}

// maxNamesSaid bounds the names one message lists.
const maxNamesSaid = 20

// maxNameSaid bounds the characters of one name in a message.
const maxNameSaid = 64

// Quoted renders a name the model or a server chose for a message: as it
// is when it is plain (printable ASCII, no quote or backslash, at most
// maxNameSaid bytes), else with every other character escaped and cut
// to maxNameSaid characters, so that a lookalike ("p\u0430th", with a
// Cyrillic a) or an invisible character cannot pass for another name and
// a huge name cannot swell the answer.
func Quoted(name string) string {
	plain := len(name) <= maxNameSaid
	for i := 0; plain && i < len(name); i++ {
		c := name[i]
		plain = c > ' ' && c < 0x7f && c != '\'' && c != '"' && c != '\\'
	}
	if plain {
		return name
	}
	cut := name
	if utf8.RuneCountInString(name) > maxNameSaid {
		n := 0
		for i := range name {
			if n == maxNameSaid {
				cut = name[:i]
				break
			}
			n++
		}
	}
	q := strconv.QuoteToASCII(cut)
	q = strings.ReplaceAll(q[1:len(q)-1], "'", "\\'")
	if cut != name {
		q += "..."
	}
	return q
}

// QuotedList renders names for a message (Quoted), comma-separated, at
// most max of them and then how many more.
func QuotedList(names []string, max int) string {
	var b strings.Builder
	for i, n := range names {
		if i == max {
			fmt.Fprintf(&b, " and %d more", len(names)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(Quoted(n))
	}
	return b.String()
}
