package catalog

import (
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/aql"
)

// genericResult is the return type of downstream operations that publish
// no outputSchema: what aqlguard makes of an MCP CallToolResult.
var genericResult = TypeInfo{Name: "ToolResult", Kind: "object",
	Description: "The downstream tool's answer: its structuredContent if any; else the parsed JSON of a single text block; else that text; else {content: [MCP content blocks]}"}

func field(name, typ string, required bool, desc string) *aql.Param {
	return &aql.Param{Name: name, Type: typ, Required: required, Description: desc}
}

// protocolTypes are the MCP-AQL protocol types (introspection.txt 5.3)
// and aqlguard's own result type.
func protocolTypes() []*TypeDetails {
	cats := make([]string, len(policy.Categories))
	for i, c := range policy.Categories {
		cats[i] = string(c)
	}
	return []*TypeDetails{
		{TypeInfo: TypeInfo{Name: "SemanticCategory", Kind: "enum",
			Description: "Standard semantic categories for operation classification"}, Values: cats},
		{TypeInfo: TypeInfo{Name: "OperationInput", Kind: "object",
			Description: "Standard input structure for all MCP-AQL operations"},
			Fields: []*aql.Param{
				field("operation", "string", true, "The operation to perform (\"batch\" or omitted with operations)"),
				field("params", "object", false, "Operation-specific parameters; they win over top-level ones"),
				field("operations", "array", false, "Batch: a list of {operation, params} run in order"),
			}},
		{TypeInfo: TypeInfo{Name: "OperationResult", Kind: "union",
			Description: "Standard result type for all operations"}, Members: []string{"OperationSuccess", "OperationFailure"}},
		{TypeInfo: TypeInfo{Name: "OperationSuccess", Kind: "object", Description: "Successful operation result"},
			Fields: []*aql.Param{
				field("success", "boolean", true, "Always true"),
				field("data", "any", true, "Operation-specific payload"),
				field("results", "array", false, "Per-operation results of a batch"),
				field("summary", "object", false, "Batch counts: total, succeeded, failed (halted, pending)"),
			}},
		{TypeInfo: TypeInfo{Name: "OperationFailure", Kind: "object", Description: "Failed operation result"},
			Fields: []*aql.Param{
				field("success", "boolean", true, "Always false"),
				field("error", "object", true, "{code, message, details}"),
				field("confirmation", "object", false, "Confirmation token details for CONFIRMATION_REQUIRED"),
			}},
		{TypeInfo: TypeInfo{Name: "EndpointPermissions", Kind: "object", Description: "Permission flags for operations"},
			Fields: []*aql.Param{
				field("readOnly", "boolean", true, "Whether the operation only reads state"),
				field("destructive", "boolean", true, "Whether the operation may remove or overwrite state"),
			}},
		{TypeInfo: genericResult, Fields: []*aql.Param{
			field("content", "array", false, "MCP content blocks, when the answer is not a single JSON text"),
		}},
		{TypeInfo: TypeInfo{Name: "FieldSelection", Kind: "object",
			Description: "Field selection on READ results: fields = preset or list of dot paths"},
			Fields: []*aql.Param{
				{Name: "presets", Type: "array", Required: false,
					Description: "minimal: id/name/title/uri/path/key/status keys; standard: every scalar field; full: everything",
					Enum:        []any{aql.PresetMinimal, aql.PresetStandard, aql.PresetFull}},
				field("fields", "array", false, "Dot-separated paths; a collection's items are filtered one by one"),
			}},
	}
}

// outputType derives the type details of an operation's outputSchema.
func outputType(op *Operation) *TypeDetails {
	return &TypeDetails{TypeInfo: op.Returns, Fields: deriveParams(op.Tool.OutputSchema)}
}
