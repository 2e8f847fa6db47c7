// Package mcpmethod is aqlguard's one table of the MCP request methods
// it handles (as the go-sdk keeps one): for each method, the members of
// its params that a decision or a route depends on, whether the guard
// judges it, how the relay routes it, whether it spans every server,
// whether it lasts in a server's session, and what the 2026-07-28
// revision says of it (its SEP-2243 headers, caching hints, whether it
// is part of it at all). The relay's checks and routes, the HTTP front's
// header checks and the downstream side's headers are read from it, so a
// method is added as one row (and, for a kind of route the relay does
// not have yet, its handler).
//
// It imports nothing of aqlguard's: every room may read it.
package mcpmethod

// The request methods, as MCP spells them. Code outside this table
// names them by these constants.
const (
	Initialize             = "initialize"
	Ping                   = "ping"
	ServerDiscover         = "server/discover"
	SubscriptionsListen    = "subscriptions/listen"
	ToolsList              = "tools/list"
	ToolsCall              = "tools/call"
	ResourcesList          = "resources/list"
	ResourcesTemplatesList = "resources/templates/list"
	ResourcesRead          = "resources/read"
	ResourcesSubscribe     = "resources/subscribe"
	ResourcesUnsubscribe   = "resources/unsubscribe"
	PromptsList            = "prompts/list"
	PromptsGet             = "prompts/get"
	CompletionComplete     = "completion/complete"
	LoggingSetLevel        = "logging/setLevel"
	TasksList              = "tasks/list"
	TasksGet               = "tasks/get"
	TasksResult            = "tasks/result"
	TasksCancel            = "tasks/cancel"
	TasksUpdate            = "tasks/update"
)

// Route is how the relay finds the server, or the servers, that serve a
// method; each is one handler of the relay's.
type Route int

// The routes.
const (
	// Unknown is a method aqlguard does not know: with one server it is
	// that server's business, with several nobody's.
	Unknown Route = iota
	// Answered: aqlguard answers it itself (the handshake, ping, a
	// 2026-07-28 client's discovery and listen streams).
	Answered
	// ModeList and ModeCall: the tools the session's mode offers, and a
	// call of one of them.
	ModeList
	ModeCall
	// Merged: every server's list in one page under aqlguard's cursor;
	// Method.Items names the list's member.
	Merged
	// PromptList: Merged, with prompts renamed where two servers offer
	// one name.
	PromptList
	// TaskList: Merged, each task named as the client sees it.
	TaskList
	// ByURI: the server that holds the resource.
	ByURI
	// Subscription: ByURI, once per session however often the client
	// asks.
	Subscription
	// ByPrompt: the server of the prompt the client named.
	ByPrompt
	// ByRef: the server of what is completed (a prompt or a resource
	// template).
	ByRef
	// EveryServer: each server that declared the capability.
	EveryServer
	// ByTask: the server the task id names.
	ByTask
)

// Method is one row of the table.
type Method struct {
	Name string
	// Judged are the members of the params that a decision or a route
	// depends on: the relay refuses params that spell one of them
	// ambiguously (relay.CheckParams), and reads them by their exact
	// names. Inside are the judged members of the first judged member's
	// object.
	Judged, Inside []string
	// Guarded: every request is put to the guard (one guard.Call) before
	// a server sees it, and a 2026-07-28 server may answer it
	// input_required (its rounds run inside the guarded call).
	Guarded bool
	Route   Route
	// Items is a Merged list's member ("resources").
	Items string
	// Session: what it asks lasts in the server's session beyond the
	// request (a subscription, a log level, a task), so a server shared
	// by every session (share = true) cannot simply be asked.
	Session bool
	// Subject is the member that names what the request is about, which
	// SEP-2243 mirrors in the Mcp-Name header (2026-07-28 over HTTP);
	// "" for none. ParamHeaders: the tool's x-mcp-header arguments ride
	// as Mcp-Param-* headers.
	Subject      string
	ParamHeaders bool
	// Cacheable: a 2026-07-28 result carries caching hints.
	Cacheable bool
	// Before2026 and Since2026 say which revisions have the method: a
	// 2025-11-25 request has only the first, a 2026-07-28 one only the
	// second.
	Before2026, Since2026 bool
}

// FanOut reports whether one request of m spans every server.
func (m Method) FanOut() bool {
	switch m.Route {
	case Merged, PromptList, TaskList, EveryServer:
		return true
	}
	return false
}

// both is a method of both revisions.
const both = true

// table is every method aqlguard handles.
var table = []Method{
	{Name: Initialize, Judged: []string{"protocolVersion", "capabilities", "clientInfo"}, Route: Answered, Before2026: true},
	{Name: Ping, Route: Answered, Before2026: true},
	{Name: ServerDiscover, Route: Answered, Cacheable: true, Since2026: true},
	{Name: SubscriptionsListen, Judged: []string{"notifications"},
		Inside: []string{"toolsListChanged", "promptsListChanged", "resourcesListChanged", "resourceSubscriptions"},
		Route:  Answered, Since2026: true},

	{Name: ToolsList, Judged: []string{"cursor"}, Route: ModeList, Cacheable: true, Before2026: both, Since2026: both},
	{Name: ToolsCall, Judged: []string{"name", "arguments"}, Guarded: true, Route: ModeCall,
		Subject: "name", ParamHeaders: true, Before2026: both, Since2026: both},

	{Name: ResourcesList, Judged: []string{"cursor"}, Route: Merged, Items: "resources", Cacheable: true, Before2026: both, Since2026: both},
	{Name: ResourcesTemplatesList, Judged: []string{"cursor"}, Route: Merged, Items: "resourceTemplates", Cacheable: true,
		Before2026: both, Since2026: both},
	{Name: ResourcesRead, Judged: []string{"uri"}, Guarded: true, Route: ByURI, Subject: "uri", Cacheable: true,
		Before2026: both, Since2026: both},
	{Name: ResourcesSubscribe, Judged: []string{"uri"}, Route: Subscription, Session: true, Before2026: true},
	{Name: ResourcesUnsubscribe, Judged: []string{"uri"}, Route: Subscription, Session: true, Before2026: true},

	{Name: PromptsList, Judged: []string{"cursor"}, Route: PromptList, Cacheable: true, Before2026: both, Since2026: both},
	{Name: PromptsGet, Judged: []string{"name", "arguments"}, Guarded: true, Route: ByPrompt, Subject: "name",
		Before2026: both, Since2026: both},
	{Name: CompletionComplete, Judged: []string{"ref", "argument", "context"}, Inside: []string{"type", "name", "uri"},
		Route: ByRef, Before2026: both, Since2026: both},
	{Name: LoggingSetLevel, Judged: []string{"level"}, Route: EveryServer, Session: true, Before2026: true},

	{Name: TasksList, Judged: []string{"cursor"}, Route: TaskList, Session: true, Before2026: both, Since2026: both},
	{Name: TasksGet, Judged: []string{"taskId"}, Route: ByTask, Session: true, Subject: "taskId", Before2026: both, Since2026: both},
	{Name: TasksResult, Judged: []string{"taskId"}, Route: ByTask, Session: true, Subject: "taskId", Before2026: both, Since2026: both},
	{Name: TasksCancel, Judged: []string{"taskId"}, Route: ByTask, Session: true, Subject: "taskId", Before2026: both, Since2026: both},
	{Name: TasksUpdate, Judged: []string{"taskId"}, Route: ByTask, Session: true, Subject: "taskId", Before2026: both, Since2026: both},
}

// byName indexes table.
var byName = func() map[string]Method {
	m := make(map[string]Method, len(table))
	for _, row := range table {
		m[row.Name] = row
	}
	return m
}()

// Lookup returns the row of a method; an unknown one has the zero Route
// (Unknown) and is part of both revisions, since aqlguard cannot say.
func Lookup(name string) Method {
	if m, ok := byName[name]; ok {
		return m
	}
	return Method{Name: name, Before2026: true, Since2026: true}
}

// All returns the table's rows, in its order.
func All() []Method { return append([]Method(nil), table...) }
