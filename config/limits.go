package config

// Limits are the MCP-AQL payload limits (spec 4.7.5), the [limits]
// table. Zero means default. The protocol core reads them as aql.Limits
// (this type); policy, and the guard that reads it, know nothing of the
// protocol's wire.
type Limits struct {
	MaxRequestSize   int64 `json:"max_request_size" toml:"max_request_size"`
	MaxResponseSize  int64 `json:"max_response_size" toml:"max_response_size"`
	MaxStringLength  int64 `json:"max_string_length" toml:"max_string_length"`
	MaxArrayElements int   `json:"max_array_elements" toml:"max_array_elements"`
	MaxNestingDepth  int   `json:"max_nesting_depth" toml:"max_nesting_depth"`
}
