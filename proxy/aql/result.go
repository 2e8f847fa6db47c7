package aql

import "github.com/aqlguard/aqlguard/proxy/rawjson"

// Result is the discriminated OperationResult. Build it with Success,
// Failure or a batch; MarshalJSON emits exactly the members
// operation-result.schema.json allows for each branch.
type Result struct {
	Success bool
	Data    any
	Err     *Error
	// Warnings are non-fatal conditions on a success.
	Warnings []Warning
	// Meta is the response's _meta member.
	Meta map[string]any
	// Results and Summary are set on batch responses.
	Results []BatchItem
	Summary *Summary
	// Confirmation is set on CONFIRMATION_REQUIRED failures.
	Confirmation *Confirmation
}

// Warning is one entry of a success's warnings array.
type Warning struct {
	Code     string         `json:"code"`
	Message  string         `json:"message"`
	Details  map[string]any `json:"details,omitempty"`
	Severity string         `json:"severity,omitempty"`
}

// BatchItem is one operation's result inside a batch response.
type BatchItem struct {
	Index     int     `json:"index"`
	Operation string  `json:"operation"`
	Result    *Result `json:"result"`
}

// Summary counts a batch's outcomes. Halted and Pending appear only when
// the batch stopped at a confirmation (operations.txt 7.5.5).
type Summary struct {
	Total     int  `json:"total"`
	Succeeded int  `json:"succeeded"`
	Failed    int  `json:"failed"`
	Halted    *int `json:"halted,omitempty"`
	Pending   *int `json:"pending,omitempty"`
}

// Confirmation is the top-level confirmation object of a gated failure.
type Confirmation struct {
	Token     string   `json:"token"`
	ExpiresAt string   `json:"expires_at"`
	Message   string   `json:"message,omitempty"`
	Reasons   []string `json:"reasons,omitempty"`
}

// Success wraps data in a success result.
func Success(data any) *Result { return &Result{Success: true, Data: data} }

// Failure wraps an error in a failure result.
func Failure(err *Error) *Result { return &Result{Err: err} }

type successWire struct {
	Success  bool           `json:"success"`
	Data     any            `json:"data"`
	Warnings []Warning      `json:"warnings,omitempty"`
	Meta     map[string]any `json:"_meta,omitempty"`
	Results  []BatchItem    `json:"results,omitempty"`
	Summary  *Summary       `json:"summary,omitempty"`
}

type failureWire struct {
	Success      bool          `json:"success"`
	Error        *Error        `json:"error"`
	Confirmation *Confirmation `json:"confirmation,omitempty"`
}

// MarshalJSON implements the discriminated union: a success always has
// data (null allowed) and never error; a failure always has error.
// Nothing is HTML-escaped: the result is read by a model, for which
// "\u003e" is three wasted tokens and a ">" that reads wrong.
func (r *Result) MarshalJSON() ([]byte, error) {
	if r.Success {
		return Marshal(successWire{Success: true, Data: r.Data, Warnings: r.Warnings,
			Meta: r.Meta, Results: r.Results, Summary: r.Summary})
	}
	err := r.Err
	if err == nil {
		err = Internal("operation failed without an error")
	}
	return Marshal(failureWire{Success: false, Error: err, Confirmation: r.Confirmation})
}

// Marshal is json.Marshal without HTML escaping (rawjson.Marshal).
var Marshal = rawjson.Marshal
