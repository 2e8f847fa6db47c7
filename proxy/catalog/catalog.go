// Package catalog is the operation catalog: the single source of truth
// (ADR-004) from which routing, validation, introspection and the tool
// descriptions are all derived. It is built once from the downstream
// servers' tools/list answers plus aqlguard's own built-in operations.
package catalog

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/aqlguard/aqlguard/effects"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Operation is one MCP-AQL operation.
type Operation struct {
	Name        string
	Category    policy.Category
	Description string
	Params      []*aql.Param
	Returns     TypeInfo
	Examples    []Example
	Permissions Permissions
	// Lifecycle is set on EXECUTE operations that manage executions.
	Lifecycle map[string]any
	// ClassifiedBy says where Category came from (config, annotations,
	// verb, default).
	ClassifiedBy string
	// ManagedCategory is the category a managed policy layer reads: the
	// tool's own classification where the override is the user's.
	ManagedCategory policy.Category
	// Model is what the tool does and what each of its arguments is
	// (package effects): the guard judges calls by it, not by Category.
	Model effects.Model

	// Server and Tool bind a downstream operation to its tool; both are
	// empty for built-in operations.
	Server string
	Tool   *mcp.Tool
	// Input is what aqlguard checks of the tool's arguments as the tool
	// names them (InputShape): transparent mode checks them by it.
	Input *aql.Shape
	// AllowUndeclared says the server's entry lets arguments the tool's
	// schema does not declare through (allow_undeclared_arguments).
	AllowUndeclared bool
	// Builtin operations are answered by aqlguard itself.
	Builtin bool
	// Selectable READ operations accept the fields parameter.
	Selectable bool
}

// Endpoint is the operation's endpoint family in the CRUDE profile.
func (o *Operation) Endpoint() string { return strings.ToLower(string(o.Category)) }

// Permissions are the introspection permission flags.
type Permissions struct {
	ReadOnly    bool `json:"readOnly"`
	Destructive bool `json:"destructive"`
}

// Example is one example request.
type Example struct {
	Description string         `json:"description,omitempty"`
	Request     map[string]any `json:"request"`
}

// TypeInfo names a type (introspection TypeInfo).
type TypeInfo struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Description string `json:"description,omitempty"`
}

// TypeDetails is a type's full definition.
type TypeDetails struct {
	TypeInfo
	Values  []string     `json:"values,omitempty"`
	Fields  []*aql.Param `json:"fields,omitempty"`
	Members []string     `json:"members,omitempty"`
}

// ServerTools is what one downstream server offered.
type ServerTools struct {
	Server     string
	Tools      []*mcp.Tool
	Categories map[string]string // tool name → category override
	// Effects are the server's [servers.effects] (tool name → effects).
	Effects map[string]string
	// Reviewed reports whether a human approved a tool as it is now
	// (tool pinning); nil: none was.
	Reviewed func(tool string) bool
	// OverridesManaged says the overrides are the managed layer's (or
	// there is no managed layer): a managed policy reads the categories
	// as they say; otherwise it reads the tools' own classification.
	OverridesManaged bool
	// Policy says which arguments are secret (Policy.SecretArgument);
	// nil: by name and schema only.
	Policy *policy.Policy
	// AllowUndeclared lets arguments the tools' schemas do not declare
	// through (the server's allow_undeclared_arguments).
	AllowUndeclared bool
}

// Catalog holds every operation, in name order.
type Catalog struct {
	ops    []*Operation
	byName map[string]*Operation
	types  []*TypeDetails
	byType map[string]*TypeDetails
	// Notes are non-fatal findings while deriving (patterns RE2 cannot
	// compile, overrides naming unknown tools), for the log.
	Notes []string
}

// New returns a catalog holding the protocol types and no operations.
func New() *Catalog {
	c := &Catalog{byName: map[string]*Operation{}, byType: map[string]*TypeDetails{}}
	for _, t := range protocolTypes() {
		c.addType(t)
	}
	return c
}

// Add registers a built-in operation.
func (c *Catalog) Add(op *Operation) error {
	if _, dup := c.byName[op.Name]; dup {
		return fmt.Errorf("operation %q defined twice", op.Name)
	}
	for _, p := range op.Params {
		if err := p.Compile(); err != nil {
			c.Notes = append(c.Notes, err.Error())
		}
	}
	c.byName[op.Name] = op
	i := sort.Search(len(c.ops), func(i int) bool { return c.ops[i].Name >= op.Name })
	c.ops = append(c.ops, nil)
	copy(c.ops[i+1:], c.ops[i:])
	c.ops[i] = op
	return nil
}

// AddServer derives and registers the operations of one downstream server.
func (c *Catalog) AddServer(st ServerTools) {
	names := make([]string, len(st.Tools))
	known := map[string]bool{}
	for i, t := range st.Tools {
		names[i] = t.Name
		known[t.Name] = true
	}
	for tool := range st.Categories {
		if !known[tool] {
			c.Notes = append(c.Notes, fmt.Sprintf("server %q: category override for unknown tool %q", st.Server, tool))
		}
	}
	opNames := operationNames(st.Server, names)
	for _, t := range st.Tools {
		op := derive(st.Server, opNames[t.Name], t, st.Categories[t.Name])
		op.Model = effects.Resolve(Definition(t), effects.Config{Effects: st.Effects, Reviewed: st.Reviewed != nil && st.Reviewed(t.Name)})
		op.Input, op.AllowUndeclared = InputShape(t.InputSchema, st.AllowUndeclared), st.AllowUndeclared
		op.ManagedCategory = op.Category
		if !st.OverridesManaged && st.Categories[t.Name] != "" {
			op.ManagedCategory, _ = Classify(t, "")
		}
		markSecrets(op, st.Policy)
		if op.Returns.Name != genericResult.Name {
			c.addType(outputType(op))
		}
		if err := c.Add(op); err != nil {
			c.Notes = append(c.Notes, err.Error())
		}
	}
}

// Lookup finds an operation by name.
func (c *Catalog) Lookup(name string) (*Operation, bool) {
	op, ok := c.byName[name]
	return op, ok
}

// Operations returns every operation in name order.
func (c *Catalog) Operations() []*Operation { return c.ops }

// Downstream returns the operations bound to downstream tools.
func (c *Catalog) Downstream() []*Operation {
	var out []*Operation
	for _, op := range c.ops {
		if !op.Builtin {
			out = append(out, op)
		}
	}
	return out
}

func (c *Catalog) addType(t *TypeDetails) {
	if _, dup := c.byType[t.Name]; dup {
		return
	}
	c.byType[t.Name] = t
	c.types = append(c.types, t)
	sort.Slice(c.types, func(i, j int) bool { return c.types[i].Name < c.types[j].Name })
}

// derive builds one downstream operation from its tool definition.
func derive(server, name string, t *mcp.Tool, override string) *Operation {
	cat, by := Classify(t, override)
	op := &Operation{
		Name:         name,
		Category:     cat,
		Description:  toolDescription(server, t),
		Params:       deriveParams(t.InputSchema),
		ClassifiedBy: by,
		Server:       server,
		Tool:         t,
		Permissions:  permissions(cat, t.Annotations),
		Returns:      genericResult,
	}
	if cat == policy.Read && !hasParam(op.Params, "fields") {
		op.Params = append(op.Params, aql.FieldsParam())
		op.Selectable = true
	}
	if !hasParam(op.Params, TokenParam) {
		op.Params = append(op.Params, ConfirmationTokenParam())
	}
	if t.OutputSchema != nil {
		op.Returns = TypeInfo{Name: pascal(name) + "Result", Kind: "object",
			Description: fmt.Sprintf("Structured result of %s.%s", server, t.Name)}
	}
	op.Examples = examples(op)
	return op
}

func toolDescription(server string, t *mcp.Tool) string {
	d := strings.TrimSpace(t.Description)
	if d == "" && t.Annotations != nil {
		d = t.Annotations.Title
	}
	if d == "" {
		d = t.Title
	}
	if d == "" {
		d = fmt.Sprintf("Calls %s on server %s", t.Name, server)
	}
	return d
}

// permissions are conservative: a tool that does not say it is harmless is
// treated as destructive when its category allows it (spec 6.1).
func permissions(cat policy.Category, a *mcp.ToolAnnotations) Permissions {
	switch cat {
	case policy.Read:
		return Permissions{ReadOnly: true}
	case policy.Create:
		return Permissions{Destructive: a != nil && a.DestructiveHint != nil && *a.DestructiveHint}
	}
	if a != nil && a.DestructiveHint != nil && !*a.DestructiveHint {
		return Permissions{}
	}
	return Permissions{Destructive: true}
}

func hasParam(ps []*aql.Param, name string) bool {
	for _, p := range ps {
		if p.Name == name || p.MapTo == name {
			return true
		}
	}
	return false
}

// TokenParam is the parameter that carries a confirmation token on a
// retried call (operations.txt 7.5.3).
const TokenParam = "confirmation_token"

// ConfirmationTokenParam is added to every downstream operation whose tool
// has no parameter of that name; aqlguard consumes it.
func ConfirmationTokenParam() *aql.Param {
	return &aql.Param{Name: TokenParam, Types: []string{"string"}, Type: "string", Consumed: true,
		Description: "Token from a CONFIRMATION_REQUIRED answer, once a human approved it; optional: an approved identical call goes through without it"}
}

// Summary is the first sentence of a description, for list responses.
func Summary(d string) string {
	d = strings.TrimSpace(d)
	if i := strings.IndexByte(d, '\n'); i >= 0 {
		d = d[:i]
	}
	if i := strings.Index(d, ". "); i >= 0 {
		d = d[:i+1]
	}
	const max = 160
	if len(d) > max {
		cut := strings.LastIndexByte(d[:max], ' ')
		if cut < max/2 {
			cut = max
		}
		d = strings.TrimRight(d[:cut], " ,;:") + "…"
	}
	return d
}

// PolicyTools describes the downstream operations for policy.Lint.
func (c *Catalog) PolicyTools() []policy.Tool {
	out := []policy.Tool{}
	for _, op := range c.Downstream() {
		t := policy.Tool{Server: op.Server, Name: op.Tool.Name, Operation: op.Name}
		if s, ok := op.Tool.InputSchema.(map[string]any); ok {
			if props, ok := s["properties"].(map[string]any); ok {
				for name := range props {
					t.Arguments = append(t.Arguments, name)
				}
			}
		}
		sort.Strings(t.Arguments)
		out = append(out, t)
	}
	return out
}

// SecretArguments are the arguments the tool's schema declares secret
// (writeOnly, format password), in the server's spelling.
func (o *Operation) SecretArguments() []string {
	var out []string
	for _, p := range o.Params {
		if p.Sensitive {
			out = append(out, p.ServerName())
		}
	}
	return out
}

// Definition is what a tool's definition says of it, as package effects
// reads it.
func Definition(t *mcp.Tool) effects.Definition {
	d := effects.Definition{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: schemaMap(t.InputSchema)}
	if a := t.Annotations; a != nil {
		// The SDK decodes readOnlyHint as a plain bool: only true says
		// anything.
		if a.ReadOnlyHint {
			yes := true
			d.ReadOnly = &yes
		}
		d.Destructive, d.OpenWorld = a.DestructiveHint, a.OpenWorldHint
		if d.Title == "" {
			d.Title = a.Title
		}
	}
	return d
}

// schemaMap is a tool's schema as decoded JSON, whichever form the SDK
// holds it in (nil when it is none or not an object).
func schemaMap(schema any) map[string]any {
	switch s := schema.(type) {
	case nil:
		return nil
	case map[string]any:
		return s
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}
