package catalog

import (
	"github.com/aqlguard/aqlguard/proxy/aql"
)

// SpecVersion is the MCP-AQL version aqlguard implements.
const SpecVersion = "1.0.0-draft"

// IntrospectOperation is the spec's introspect operation (spec 7.2),
// answered from the catalog itself.
func IntrospectOperation() *Operation {
	op := &Operation{
		Name:        "introspect",
		Category:    "READ",
		Description: "Discover available operations and types. query=operations lists operations; add name for one operation's parameters, returns and examples. query=types likewise for types.",
		Params: []*aql.Param{
			{Name: "query", Types: []string{"string"}, Required: true, Enum: []any{"operations", "types"},
				Description: "What to introspect"},
			{Name: "name", Types: []string{"string"}, Description: "Specific operation or type name for details"},
		},
		Returns:     TypeInfo{Name: "IntrospectionResult", Kind: "object", Description: "Operations or types, listed or in detail"},
		Permissions: Permissions{ReadOnly: true},
		Builtin:     true,
	}
	op.Examples = []Example{
		{Description: "List all operations", Request: map[string]any{"operation": "introspect", "params": map[string]any{"query": "operations"}}},
		{Description: "Details of one operation", Request: map[string]any{"operation": "introspect", "params": map[string]any{"query": "operations", "name": "introspect"}}},
		{Description: "List all types", Request: map[string]any{"operation": "introspect", "params": map[string]any{"query": "types"}}},
	}
	return op
}

// OperationInfo is a list entry.
type OperationInfo struct {
	Name             string `json:"name"`
	SemanticCategory string `json:"semantic_category"`
	Endpoint         string `json:"endpoint"`
	Description      string `json:"description"`
}

// OperationDetails is a detail answer.
type OperationDetails struct {
	Name             string         `json:"name"`
	SemanticCategory string         `json:"semantic_category"`
	Endpoint         string         `json:"endpoint"`
	MCPTool          string         `json:"mcpTool"`
	Description      string         `json:"description"`
	Permissions      Permissions    `json:"permissions"`
	Parameters       []*aql.Param   `json:"parameters"`
	Returns          TypeInfo       `json:"returns"`
	Examples         []Example      `json:"examples,omitempty"`
	Lifecycle        map[string]any `json:"lifecycle,omitempty"`
}

// Introspect answers the introspect operation. toolFor names the MCP tool
// that carries an operation in the running mode; protocol is the
// _protocol object of operation lists. An unknown name is null, not an
// error (introspection.txt 4.3).
func (c *Catalog) Introspect(query, name string, toolFor func(*Operation) string, protocol map[string]any) map[string]any {
	switch query {
	case "types":
		if name == "" {
			infos := make([]TypeInfo, len(c.types))
			for i, t := range c.types {
				infos[i] = t.TypeInfo
			}
			return map[string]any{"types": infos}
		}
		if t, ok := c.byType[name]; ok {
			return map[string]any{"type": t}
		}
		return map[string]any{"type": nil}
	default: // "operations"; validation has already rejected anything else
		if name == "" {
			infos := make([]OperationInfo, len(c.ops))
			for i, op := range c.ops {
				infos[i] = OperationInfo{Name: op.Name, SemanticCategory: string(op.Category),
					Endpoint: op.Endpoint(), Description: Summary(op.Description)}
			}
			return map[string]any{"_protocol": protocol, "operations": infos}
		}
		op, ok := c.byName[name]
		if !ok {
			return map[string]any{"operation": nil}
		}
		params := op.Params
		if params == nil {
			params = []*aql.Param{}
		}
		return map[string]any{"operation": OperationDetails{
			Name: op.Name, SemanticCategory: string(op.Category), Endpoint: op.Endpoint(),
			MCPTool: toolFor(op), Description: op.Description, Permissions: op.Permissions,
			Parameters: params, Returns: op.Returns, Examples: op.Examples, Lifecycle: op.Lifecycle,
		}}
	}
}
