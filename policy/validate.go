package policy

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/policy/paths"
)

// Allowed values. They are part of the file format, so they are spelled out
// in config.example.toml too.
var (
	modes          = []string{"transparent", "semantic", "single", "all", "passthrough"}
	loopModes      = []LoopMode{LoopEnforcing, LoopMonitoring, LoopLogging, LoopDisabled}
	riskTolerances = []string{"conservative", "moderate", "aggressive"}
	transports     = []string{"stdio", "streamable", "sse"}
	actions        = []Action{ActionDeny, ActionRefuse, ActionRequiresApproval, ActionAutoApprove}
	codeActions    = []InterpreterCode{CodeAsk, CodeDeny, CodeRefuse, CodeAllow}
)

const (
	kiB = 1 << 10
	miB = 1 << 20
)

// Limit ranges from MCP-AQL 4.7.5 (KB and MB read as KiB and MiB; the
// spec's own example values are 1048576 and 10485760).
var (
	requestSizeRange   = limitRange{64 * kiB, 10 * miB, 1 * miB}
	responseSizeRange  = limitRange{1 * miB, 100 * miB, 10 * miB}
	stringLengthRange  = limitRange{64 * kiB, 10 * miB, 1 * miB}
	arrayElementsRange = limitRange{100, 100_000, 10_000}
	nestingDepthRange  = limitRange{8, 64, 32}
)

type limitRange struct{ min, max, def int64 }

var serverNameRE = regexp.MustCompile(`^[a-z][a-z0-9]{0,31}$`)

// ValidServerName reports whether s may name a server.
func ValidServerName(s string) bool { return serverNameRE.MatchString(s) }

// validator checks a decoded Config and fills in defaults. With a walker it
// knows which keys the file spelled out and where; without one (a Config
// built in Go) every zero value simply means "use the default".
type validator struct {
	file   string
	walker *schemaWalker
	errs   config.Errors
	// managed says the file is the managed policy layer (ParseManaged).
	managed bool
}

func (v *validator) present(key string) bool {
	if v.walker == nil {
		return false
	}
	_, ok := v.walker.first[key]
	return ok
}

func (v *validator) errf(key, format string, args ...any) {
	e := config.Error{File: v.file, Key: key, Msg: fmt.Sprintf(format, args...)}
	if v.walker != nil {
		if v.walker.isBad(key) {
			return
		}
		// An absent key has no line of its own; point at its table.
		for k := key; k != ""; k = parentKey(k) {
			if p, ok := v.walker.first[k]; ok {
				e.Line, e.Column = p.line, p.col
				break
			}
		}
	}
	v.errs = append(v.errs, e)
}

func (w *schemaWalker) isBad(key string) bool {
	for _, b := range w.bad {
		if key == b || strings.HasPrefix(key, b) && len(key) > len(b) && (key[len(b)] == '.' || key[len(b)] == '[') {
			return true
		}
	}
	return false
}

// parentKey drops the last part of a key path: servers[1].url -> servers[1]
// -> servers; agents."a.b".loop -> agents."a.b".
func parentKey(key string) string {
	seps := separators(key)
	if len(seps) == 0 {
		return ""
	}
	return key[:seps[len(seps)-1]]
}

// separators are the positions of the '.' and '[' that separate the
// parts of a key path (not those inside a quoted part).
func separators(key string) []int {
	var out []int
	inQuote := false
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case inQuote && c == '\\':
			i++
		case c == '"':
			inQuote = !inQuote
		case !inQuote && (c == '.' || c == '['):
			out = append(out, i)
		}
	}
	return out
}

func (v *validator) config(c *config.Config) {
	// A single server is put behind the guard as it is (transparent);
	// several get the MCP-AQL endpoints, which multiplex them.
	def := config.DefaultMode
	if len(c.Servers) == 1 {
		def = "transparent"
	}
	v.enum("mode", &c.Mode, modes, def)
	v.duration("state_lock_timeout", &c.StateLockTimeout, config.DefaultStateLockTimeout)
	if c.StateLockTimeout.Duration > config.MaxStateLockTimeout {
		v.errf("state_lock_timeout", "%s is longer than the maximum %s: a call must not hang on another process", c.StateLockTimeout.Duration, config.MaxStateLockTimeout)
	}
	switch {
	case c.Agent == "" && v.present("agent"):
		v.errf("agent", "must not be empty: it names the principal that owns blocks and audit entries")
	case c.Agent == "":
		c.Agent = config.DefaultAgent
	case !config.ValidAgentName(c.Agent):
		v.errf("agent", "%q is not a valid agent name: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", c.Agent)
	}
	v.limits(&c.Limits)
	v.audit(&c.Audit)
	v.safety(&c.Safety)
	v.flows(&c.Flows)
	for _, name := range slices.Sorted(maps.Keys(c.Agents)) {
		key := joinKey("agents", name)
		if !config.ValidAgentName(name) {
			v.errf(key, "%q is not a valid agent name: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
		}
		v.override(key, c.Agents[name])
	}
	v.verify(&c.Verify)
	v.serve(&c.Serve)
	v.state(&c.State)
	v.servers(c.Servers)
	v.locked(c.Locked)
}

func (v *validator) serve(s *config.Serve) {
	v.enum("serve.auth", &s.Auth, []string{"token", "none"}, "token")
	switch {
	case s.MaxSessions == 0 && !v.present("serve.max_sessions"):
		s.MaxSessions = config.DefaultMaxSessions
	case s.MaxSessions < 1 || s.MaxSessions > 1024:
		v.errf("serve.max_sessions", "%d is out of range: use 1 to 1024; default %d", s.MaxSessions, config.DefaultMaxSessions)
	}
	v.duration("serve.session_idle_timeout", &s.SessionIdleTimeout, config.DefaultSessionIdleTimeout)
	v.duration("serve.principal_idle_timeout", &s.PrincipalIdleTimeout, config.DefaultPrincipalIdleTimeout)
	if s.TokenFile != "" && !filepath.IsAbs(s.TokenFile) {
		v.errf("serve.token_file", "%q must be an absolute path", s.TokenFile)
	}
	if s.MetricsListen != "" {
		if _, port, err := net.SplitHostPort(s.MetricsListen); err != nil || port == "" {
			v.errf("serve.metrics_listen", "%q is not HOST:PORT (e.g. \"127.0.0.1:9464\")", s.MetricsListen)
		}
	}
	if s.TracesEndpoint != "" {
		switch u, err := url.Parse(s.TracesEndpoint); {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			v.errf("serve.traces_endpoint", "%q is not an http:// or https:// URL (e.g. \"http://127.0.0.1:4318/v1/traces\")", s.TracesEndpoint)
		case plainRemote(u) && u.User != nil:
			v.errf("serve.traces_endpoint", "%q has a user name or password in it, which plain http to %s shows to anyone on the network path; "+
				"use an https:// url", redactURL(u), u.Hostname())
		}
	}
	v.serveClients(s.Clients)
	if s.OAuth != nil {
		v.serveOAuth(s.OAuth)
	}
	if s.Auth == "none" && (len(s.Clients) > 0 || s.OAuth != nil) {
		v.errf("serve.auth", "\"none\" lets every request in, so [[serve.clients]] and [serve.oauth] would not be asked: use auth = \"token\"")
	}
}

func (v *validator) serveClients(list []config.ServeClient) {
	seen := map[string]int{}
	digests := map[string]int{}
	for i, c := range list {
		k := index("serve.clients", i)
		switch {
		case c.Name == "":
			v.errf(k+".name", "is required: it names the client in the audit log")
		case !config.ValidAgentName(c.Name):
			v.errf(k+".name", "%q is not a valid client name: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", c.Name)
		case c.Name == config.LegacyClient:
			v.errf(k+".name", "%q names the client of the single serve token; choose another name", c.Name)
		}
		if j, dup := seen[c.Name]; dup && c.Name != "" {
			v.errf(k+".name", "%q is already the name of serve.clients[%d]", c.Name, j)
		} else {
			seen[c.Name] = i
		}
		if c.Agent != "" && !config.ValidAgentName(c.Agent) {
			v.errf(k+".agent", "%q is not a valid agent name: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", c.Agent)
		}
		switch {
		case !config.TokenDigestRE.MatchString(c.TokenSHA256):
			v.errf(k+".token_sha256", "must be the token's SHA-256 as 64 lowercase hex digits (`aqlguard serve token add` writes it)")
		default:
			if j, dup := digests[c.TokenSHA256]; dup {
				v.errf(k+".token_sha256", "is the same token as serve.clients[%d]: one token would be two clients", j)
			}
			digests[c.TokenSHA256] = i
		}
		if c.Created != "" {
			if _, err := time.Parse(time.RFC3339, c.Created); err != nil {
				v.errf(k+".created", "%q is not an RFC 3339 time", c.Created)
			}
		}
	}
}

func (v *validator) serveOAuth(o *config.ServeOAuth) {
	if o.Issuer == "" {
		v.errf("serve.oauth.issuer", "is required: the authorization server whose tokens are accepted")
	} else if u, err := url.Parse(o.Issuer); err != nil || u.Scheme == "" || u.Host == "" {
		v.errf("serve.oauth.issuer", "%q is not a URL", o.Issuer)
	}
	switch u, err := url.Parse(o.JWKSURL); {
	case o.JWKSURL == "":
		v.errf("serve.oauth.jwks_url", "is required: where the issuer's signing keys are")
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		v.errf("serve.oauth.jwks_url", "%q is not an http(s) URL", o.JWKSURL)
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		v.errf("serve.oauth.jwks_url", "%q: keys fetched over plain http could be replaced on the way; use https (http only on a loopback address)", o.JWKSURL)
	}
	switch u, err := url.Parse(o.Resource); {
	case o.Resource == "":
		v.errf("serve.oauth.resource", "is required: this server's canonical URI, which a token's audience must name")
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.Fragment != "":
		v.errf("serve.oauth.resource", "%q is not an absolute http(s) URI without a fragment", o.Resource)
	}
	if len(o.Scopes) == 0 && !v.present("serve.oauth.scopes") {
		o.Scopes = []string{"mcp"}
	}
	for i, sc := range o.Scopes {
		if sc == "" || strings.ContainsAny(sc, " \"") {
			v.errf(index("serve.oauth.scopes", i), "%q is not a scope token", sc)
		}
	}
	if o.PrincipalClaim == "" {
		o.PrincipalClaim = "sub"
	}
	if len(o.Algorithms) == 0 {
		o.Algorithms = slices.Clone(config.DefaultSignatureAlgorithms)
	}
	for i, a := range o.Algorithms {
		if !slices.Contains(config.SignatureAlgorithms, a) {
			v.errf(index("serve.oauth.algorithms", i), "%q is not accepted; use %s (HMAC and none are never accepted)", a, oneOf(config.SignatureAlgorithms))
		}
	}
}

// stateSchema is what [state] schema may be (store/pgstate checks it
// again).
var stateSchema = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,47}$`)

func (v *validator) state(s *config.State) {
	v.enum("state.backend", &s.Backend, config.StateBackends, config.StateBolt)
	if s.Backend != config.StatePostgres {
		for _, key := range []string{"state.dsn", "state.schema"} {
			if v.present(key) {
				v.errf(key, "is for backend = %q; the backend is %q", config.StatePostgres, s.Backend)
			}
		}
		return
	}
	if s.Schema == "" && !v.present("state.schema") {
		s.Schema = "aqlguard"
	} else if !stateSchema.MatchString(s.Schema) {
		v.errf("state.schema", "%q is not a schema name: use 1-48 lower-case letters, digits and _, not starting with a digit", s.Schema)
	}
}

func (v *validator) enum(key string, val *string, allowed []string, def string) {
	switch {
	case *val == "" && !v.present(key):
		*val = def
	case !slices.Contains(allowed, *val):
		v.errf(key, "%q is not valid; use %s", *val, oneOf(allowed))
	}
}

func oneOf[T ~string](vals []T) string {
	q := make([]string, len(vals))
	for i, s := range vals {
		q[i] = strconv.Quote(string(s))
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

func (v *validator) limits(l *config.Limits) {
	limit(v, "limits.max_request_size", &l.MaxRequestSize, requestSizeRange, "bytes")
	limit(v, "limits.max_response_size", &l.MaxResponseSize, responseSizeRange, "bytes")
	limit(v, "limits.max_string_length", &l.MaxStringLength, stringLengthRange, "bytes")
	limit(v, "limits.max_array_elements", &l.MaxArrayElements, arrayElementsRange, "elements")
	limit(v, "limits.max_nesting_depth", &l.MaxNestingDepth, nestingDepthRange, "levels")
}

func limit[T int | int64](v *validator, key string, val *T, r limitRange, unit string) {
	switch n := int64(*val); {
	case n == 0 && !v.present(key):
		*val = T(r.def)
	case n < r.min || n > r.max:
		v.errf(key, "%d is out of range: use %s to %s %s (MCP-AQL 4.7.5; default %s)",
			n, humanSize(r.min, unit), humanSize(r.max, unit), unit, humanSize(r.def, unit))
	}
}

func humanSize(n int64, unit string) string {
	if unit != "bytes" {
		return strconv.FormatInt(n, 10)
	}
	switch {
	case n%miB == 0:
		return fmt.Sprintf("%d (%d MiB)", n, n/miB)
	case n%kiB == 0:
		return fmt.Sprintf("%d (%d KiB)", n, n/kiB)
	}
	return strconv.FormatInt(n, 10)
}

func (v *validator) safety(s *config.Safety) {
	v.enum("safety.loop", &s.Loop, loopStrings(), string(LoopEnforcing))
	switch {
	case s.MaxAutonomousSteps == 0 && !v.present("safety.max_autonomous_steps"):
		s.MaxAutonomousSteps = config.DefaultMaxAutonomousSteps
	case s.MaxAutonomousSteps < 1:
		v.errf("safety.max_autonomous_steps", "%d is out of range: must be at least 1", s.MaxAutonomousSteps)
	}
	v.enum("safety.risk_tolerance", &s.RiskTolerance, riskTolerances, config.DefaultRiskTolerance)
	v.enum("safety.interpreter_code", &s.InterpreterCode, codeStrings(), string(CodeAsk))
	v.lists("safety", s.Deny, s.Refuse, s.RequiresApproval, s.AutoApprove, s.Rules, s.RiskRules)
	v.argumentSpecs("safety.shell_arguments", s.ShellArguments)
	v.argumentSpecs("safety.secret_arguments", s.SecretArguments)
	for i, src := range s.SensitivePaths {
		if err := paths.CheckPattern(src); err != nil {
			v.errf(index("safety.sensitive_paths", i), "%v (a pattern such as \"~/work/secrets/**\" or \"**/credentials.json\")", err)
		}
	}
}

func (v *validator) argumentSpecs(key string, list []string) {
	for i, src := range list {
		if _, err := ParseArgumentSpec(src); err != nil {
			v.errf(key+"["+strconv.Itoa(i)+"]", "%q: %v (write ARGUMENT or TOOL:ARGUMENT, e.g. \"runner.exec:script\")", src, err)
		}
	}
}

func (v *validator) audit(a *config.Audit) {
	const key = "audit.max_argument_bytes"
	switch {
	case a.MaxArgumentBytes == 0 && !v.present(key):
		a.MaxArgumentBytes = config.DefaultMaxArgumentBytes
	case a.MaxArgumentBytes < 1024 || a.MaxArgumentBytes > 16*miB:
		v.errf(key, "%d is out of range: use 1024 to %d (16 MiB); default %d (64 KiB)", a.MaxArgumentBytes, 16*miB, config.DefaultMaxArgumentBytes)
	}
	switch a.Sync {
	case "":
		a.Sync = "grouped"
	case "grouped", "always":
	default:
		v.errf("audit.sync", "%q is not valid; use \"grouped\" (fsync within 10 ms, the default) or \"always\" (fsync before the call goes on)", a.Sync)
	}
	if a.Forward != nil {
		v.forward(a.Forward)
	}
}

func (v *validator) forward(f *config.Forward) {
	const k = "audit.forward"
	only := func(key, val string, tos ...string) {
		if val != "" && !slices.Contains(tos, f.To) {
			v.errf(k+"."+key, "only applies with to = %s", oneOf(tos))
		}
	}
	switch f.To {
	case "syslog":
		u, err := url.Parse(f.Address)
		switch {
		case f.Address == "":
			v.errf(k+".address", `is required with to = "syslog": "relp://HOST:PORT", "relp+tls://HOST:PORT", "tcp://HOST:PORT" or "tls://HOST:PORT"`)
		case err != nil || !slices.Contains([]string{"relp", "relp+tls", "tcp", "tls"}, u.Scheme) || u.Host == "" || u.Port() == "" || u.Path != "":
			v.errf(k+".address", `%q is not "relp://HOST:PORT", "relp+tls://HOST:PORT", "tcp://HOST:PORT" or "tls://HOST:PORT"`, f.Address)
		}
	case "otlp", "splunk":
		u, err := url.Parse(f.URL)
		switch {
		case f.URL == "":
			v.errf(k+".url", "is required with to = %q: the collector's endpoint", f.To)
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			v.errf(k+".url", "%q is not an http:// or https:// URL", f.URL)
		case plainRemote(u):
			v.noCredentials(k, u, f.Headers, "a collector that is sent credentials")
		}
	case "file":
		switch {
		case f.Path == "":
			v.errf(k+".path", `is required with to = "file": the file the OCSF events are appended to`)
		case !filepath.IsAbs(f.Path):
			v.errf(k+".path", "%q must be an absolute path", f.Path)
		}
	case "":
		v.errf(k+".to", "is required: %s", oneOf(config.ForwardDestinations))
	default:
		v.errf(k+".to", "%q is not valid; use %s", f.To, oneOf(config.ForwardDestinations))
	}
	only("address", f.Address, "syslog")
	only("url", f.URL, "otlp", "splunk")
	only("path", f.Path, "file")
	if len(f.Headers) > 0 && f.To != "otlp" && f.To != "splunk" {
		v.errf(k+".headers", `only applies with to = "otlp" or "splunk"`)
	}
	for _, name := range slices.Sorted(maps.Keys(f.Headers)) {
		if name == "" || strings.ContainsAny(name, " \t\r\n:") {
			v.errf(joinKey(k+".headers", name), "%q is not a valid HTTP header name", name)
		}
	}
	if f.CAFile != "" && !filepath.IsAbs(f.CAFile) {
		v.errf(k+".ca_file", "%q must be an absolute path", f.CAFile)
	}
	switch {
	case f.Batch == 0 && !v.present(k+".batch"):
		f.Batch = config.DefaultForwardBatch
	case f.Batch < 1 || f.Batch > config.MaxForwardBatch:
		v.errf(k+".batch", "%d is out of range: use 1 to %d; default %d", f.Batch, config.MaxForwardBatch, config.DefaultForwardBatch)
	}
	v.enum(k+".start", &f.Start, []string{"oldest", "newest"}, "oldest")
	if v.present(k + ".assume_delivered_after") {
		if u, err := url.Parse(f.Address); f.To != "syslog" || err != nil || (u.Scheme != "tcp" && u.Scheme != "tls") {
			v.errf(k+".assume_delivered_after", `only applies to plain syslog (to = "syslog" with a tcp:// or tls:// address): the other transports confirm what they get`)
		}
	}
	v.duration(k+".assume_delivered_after", &f.AssumeDeliveredAfter, config.DefaultAssumeDeliveredAfter)
	if d := f.AssumeDeliveredAfter.Duration; d > config.MaxAssumeDeliveredAfter || (d > 0 && d < time.Second) {
		v.errf(k+".assume_delivered_after", "%s is out of range: use 1s to %s; default %s", d, config.MaxAssumeDeliveredAfter, config.DefaultAssumeDeliveredAfter)
	}
}

func (v *validator) override(key string, o config.AgentOverride) {
	if o.Loop != nil && !slices.Contains(loopStrings(), *o.Loop) {
		v.errf(key+".loop", "%q is not valid; use %s", *o.Loop, oneOf(loopModes))
	}
	if o.MaxAutonomousSteps != nil && *o.MaxAutonomousSteps < 1 {
		v.errf(key+".max_autonomous_steps", "%d is out of range: must be at least 1", *o.MaxAutonomousSteps)
	}
	if o.RiskTolerance != nil && !slices.Contains(riskTolerances, *o.RiskTolerance) {
		v.errf(key+".risk_tolerance", "%q is not valid; use %s", *o.RiskTolerance, oneOf(riskTolerances))
	}
	if o.InterpreterCode != nil && !slices.Contains(codeStrings(), *o.InterpreterCode) {
		v.errf(key+".interpreter_code", "%q is not valid; use %s", *o.InterpreterCode, oneOf(codeActions))
	}
	v.lists(key, o.Deny, o.Refuse, o.RequiresApproval, o.AutoApprove, o.Rules, o.RiskRules)
	v.argumentSpecs(key+".shell_arguments", o.ShellArguments)
	v.argumentSpecs(key+".secret_arguments", o.SecretArguments)
}

func codeStrings() []string {
	s := make([]string, len(codeActions))
	for i, a := range codeActions {
		s[i] = string(a)
	}
	return s
}

func loopStrings() []string {
	s := make([]string, len(loopModes))
	for i, m := range loopModes {
		s[i] = string(m)
	}
	return s
}

func (v *validator) lists(key string, deny, refuse, approve, auto []string, rules []config.ArgRule, risk []config.RiskRule) {
	v.patterns(key+".deny", deny)
	v.patterns(key+".refuse", refuse)
	v.patterns(key+".requires_approval", approve)
	v.patterns(key+".auto_approve", auto)
	for i, r := range rules {
		k := key + ".rules[" + strconv.Itoa(i) + "]"
		switch {
		case r.Action == "":
			v.errf(k+".action", "is required: %s", oneOf(actions))
		case !slices.Contains(actions, Action(r.Action)):
			v.errf(k+".action", "%q is not valid; use %s", r.Action, oneOf(actions))
		}
		switch {
		case len(r.Roles) > 0 && r.Argument != "":
			v.errf(k+".roles", "set either argument (one argument) or roles (every argument of those roles), not both")
		case len(r.Roles) > 0:
			for j, name := range r.Roles {
				if _, err := ParseRole(name); err != nil {
					v.errf(k+".roles["+strconv.Itoa(j)+"]", "%v", err)
				}
			}
		case v.present(k + ".roles"):
			v.errf(k+".roles", "must name at least one role: %s", oneOf(roleNames[:]))
		case strings.TrimSpace(r.Argument) == "":
			v.errf(k+".argument", "is required: the name of the argument whose value the pattern matches (or roles, e.g. [\"content\"])")
		default:
			if _, err := ArgumentPath(r.Argument); err != nil {
				v.errf(k+".argument", "%q: %v", r.Argument, err)
			}
		}
		v.pattern(k+".pattern", r.Pattern)
		if r.Operation != "" {
			v.pattern(k+".operation", r.Operation)
		}
	}
	for i, r := range risk {
		k := key + ".risk_rules[" + strconv.Itoa(i) + "]"
		v.pattern(k+".pattern", r.Pattern)
		switch {
		case r.Score < 0 || r.Score > 100:
			v.errf(k+".score", "%d is out of range: use 0 to 100", r.Score)
		case v.walker != nil && !v.present(k+".score"):
			v.errf(k+".score", "is required: the minimum risk (0-100) for matching calls")
		}
		if r.Argument != "" {
			if _, err := ArgumentPath(r.Argument); err != nil {
				v.errf(k+".argument", "%q: %v", r.Argument, err)
			}
		}
	}
}

func (v *validator) patterns(key string, list []string) {
	for i, src := range list {
		v.pattern(key+"["+strconv.Itoa(i)+"]", src)
	}
}

func (v *validator) pattern(key, src string) {
	if src == "" {
		v.errf(key, "is required: a glob pattern")
		return
	}
	if _, err := CompilePattern(src); err != nil {
		v.errf(key, "%q: %v", src, err)
	}
}

func (v *validator) verify(c *config.Verify) {
	v.enum("verify.channel", &c.Channel, config.Channels, config.DefaultChannel)
	switch {
	case c.Channel == "command" && (len(c.Command) == 0 || strings.TrimSpace(c.Command[0]) == ""):
		v.errf("verify.command", `is required when channel = "command": the program and arguments to run, e.g. ["/usr/local/bin/page-oncall"]`)
	case len(c.Command) > 0 && !filepath.IsAbs(c.Command[0]):
		// Looked up on $PATH, a program planted earlier on it would be
		// shown every code and could answer every question.
		v.errf("verify.command", "%q must be an absolute path (the program is never looked up on $PATH)", c.Command[0])
	}
	v.duration("verify.timeout", &c.Timeout, config.DefaultVerifyTimeout)
	v.duration("verify.inline_wait", &c.InlineWait, config.DefaultInlineWait)
	v.duration("verify.confirmation_ttl", &c.ConfirmationTTL, config.DefaultConfirmationTTL)
	if c.ConfirmationTTL.Duration > config.MaxConfirmationTTL {
		v.errf("verify.confirmation_ttl", "%s is longer than the maximum %s (confirmation-tokens.md 5.1)", c.ConfirmationTTL.Duration, config.MaxConfirmationTTL)
	}
	v.duration("verify.challenge_ttl", &c.ChallengeTTL, config.DefaultChallengeTTL)
	v.duration("verify.session_approval_ttl", &c.SessionApprovalTTL, config.DefaultSessionApprovalTTL)
	if c.SessionApprovalTTL.Duration > config.MaxSessionApprovalTTL {
		v.errf("verify.session_approval_ttl", "%s is longer than the maximum %s", c.SessionApprovalTTL.Duration, config.MaxSessionApprovalTTL)
	}
}

func (v *validator) duration(key string, d *config.Duration, def time.Duration) {
	switch {
	case d.Duration == 0 && !v.present(key):
		d.Duration = def
	case d.Duration <= 0:
		v.errf(key, "%s is not positive", d.Duration)
	}
}

func (v *validator) servers(list []config.Server) {
	seen := map[string]int{}
	for i := range list {
		s := &list[i]
		k := "servers[" + strconv.Itoa(i) + "]"
		switch {
		case s.Name == "":
			v.errf(k+".name", "is required")
		case !ValidServerName(s.Name):
			v.errf(k+".name", "%q is not a valid server name: use 1-32 lowercase letters and digits, starting with a letter; "+
				"'_' and '-' are not allowed because operation names are <server>_<tool>, and an '_' in the server name would make that split ambiguous", s.Name)
		default:
			if j, dup := seen[s.Name]; dup {
				v.errf(k+".name", "%q is already the name of servers[%d]", s.Name, j)
			} else {
				seen[s.Name] = i
			}
		}

		hasCmd, hasURL := s.Command != "", s.URL != ""
		if hasCmd && strings.TrimSpace(s.Command) == "" {
			v.errf(k+".command", "must not be blank")
		}
		switch {
		case hasCmd && hasURL:
			v.errf(k+".url", "set either command (a local stdio server) or url (a remote server), not both")
		case !hasCmd && !hasURL:
			v.errf(k, "needs command (a local stdio server) or url (a remote server)")
		}

		switch {
		case s.Transport == "" && !v.present(k+".transport"):
			switch {
			case hasCmd && !hasURL:
				s.Transport = "stdio"
			case hasURL && !hasCmd:
				s.Transport = "streamable"
			}
		case !slices.Contains(transports, s.Transport):
			v.errf(k+".transport", "%q is not valid; use %s", s.Transport, oneOf(transports))
		case s.Transport == "stdio" && !hasCmd:
			v.errf(k+".transport", `"stdio" needs command: the program to start`)
		case s.Transport != "stdio" && !hasURL:
			v.errf(k+".transport", "%q needs url: the server's HTTP endpoint", s.Transport)
		}

		switch s.Protocol {
		case "":
			s.Protocol = "auto"
		case "auto", "2026-07-28", "2025-11-25":
		default:
			v.errf(k+".protocol", `%q is not valid; use "auto", "2026-07-28" or "2025-11-25"`, s.Protocol)
		}

		if hasURL {
			if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				v.errf(k+".url", "%q is not an http:// or https:// URL", s.URL)
			}
		}
		v.serverTransport(k, s)
		if !hasCmd {
			// These only make sense for a process we start; on a remote
			// server they would be silently ignored.
			if len(s.Args) > 0 {
				v.errf(k+".args", "only applies to servers started with command")
			}
			if len(s.Env) > 0 {
				v.errf(k+".env", "only applies to servers started with command")
			}
			if s.Cwd != "" {
				v.errf(k+".cwd", "only applies to servers started with command")
			}
		}
		v.share(k, s, hasCmd)
		v.sandbox(k, s, hasCmd)
		if !hasURL && len(s.Headers) > 0 {
			v.errf(k+".headers", "only applies to servers with url")
		}
		for _, name := range slices.Sorted(maps.Keys(s.Env)) {
			if name == "" || strings.ContainsAny(name, "=\x00") {
				v.errf(joinKey(k+".env", name), "%q is not a valid environment variable name", name)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(s.Headers)) {
			if name == "" || strings.ContainsAny(name, " \t\r\n:") {
				v.errf(joinKey(k+".headers", name), "%q is not a valid HTTP header name", name)
			}
		}

		switch s.Auth {
		case "":
			s.Auth = "none"
		case "none", "oauth":
		default:
			v.errf(k+".auth", `%q is not valid; use "none" or "oauth"`, s.Auth)
		}
		if !hasURL && s.Auth == "oauth" {
			v.errf(k+".auth", "only applies to servers with url")
		}
		if s.OAuthClientID != "" && s.Auth != "oauth" {
			v.errf(k+".oauth_client_id", `only applies with auth = "oauth"`)
		}
		startDefault := config.DefaultStartTimeout
		if s.Auth == "oauth" {
			startDefault = config.DefaultOAuthStartTimeout // the first start waits for a human's consent
		}
		v.duration(k+".start_timeout", &s.StartTimeout, startDefault)
		v.duration(k+".call_timeout", &s.CallTimeout, config.DefaultCallTimeout)
		if s.CallTimeout.Duration > config.MaxCallTimeout {
			v.errf(k+".call_timeout", "%s is more than the maximum %s", s.CallTimeout.Duration, config.MaxCallTimeout)
		}

		for _, tool := range slices.Sorted(maps.Keys(s.Categories)) {
			ck := joinKey(k+".categories", tool)
			if tool == "" {
				v.errf(ck, "a tool name is required")
				continue
			}
			c := Category(strings.ToUpper(strings.TrimSpace(s.Categories[tool])))
			if !slices.Contains(Categories, c) {
				v.errf(ck, "%q is not a category; use %s", s.Categories[tool], oneOf(Categories))
				continue
			}
			s.Categories[tool] = string(c)
		}
		for _, tool := range slices.Sorted(maps.Keys(s.Effects)) {
			ek := joinKey(k+".effects", tool)
			if tool == "" {
				v.errf(ek, "a tool name is required")
				continue
			}
			e, err := ParseEffects(s.Effects[tool])
			if err != nil {
				v.errf(ek, "%v", err)
				continue
			}
			s.Effects[tool] = e.String()
		}
		for _, arg := range slices.Sorted(maps.Keys(s.Arguments)) {
			ak := joinKey(k+".arguments", arg)
			if _, err := ParseArgumentSpec(arg); err != nil {
				v.errf(ak, "%q: %v (write ARGUMENT or TOOL:ARGUMENT, e.g. \"write_file:content\")", arg, err)
			}
			if _, err := ParseRole(s.Arguments[arg]); err != nil {
				v.errf(ak, "%v", err)
			}
		}
	}
}

// share checks share and roots: one process serves every session of a
// shared server, so it must be one aqlguard starts (stdio), spoken to
// in a revision whose per-session state aqlguard can route (2025-11-25:
// 2026-07-28 carries the log level and subscriptions per request and
// stream). Roots, on any server, are the roots it works in, which its
// path arguments are judged against; pinned on a shared server, they are
// also what it is given. Each is an absolute URI, and a file: one names
// one local path.
func (v *validator) share(k string, s *config.Server, hasCmd bool) {
	pinned := s.Roots != nil || v.present(k+".roots")
	if pinned && s.Roots == nil {
		s.Roots = []string{}
	}
	for i, r := range s.Roots {
		u, err := url.Parse(r)
		switch {
		case err != nil || u.Scheme == "" || !u.IsAbs():
			v.errf(index(k+".roots", i), "%q is not an absolute URI (a root is a URI such as file:///home/alice/projects)", r)
		case strings.EqualFold(u.Scheme, "file"):
			if p := paths.Canonical(r, "", ""); !p.OK {
				v.errf(index(k+".roots", i), "%q: %s", r, p.Why)
			}
		}
	}
	if !s.Share {
		return
	}
	switch {
	case !hasCmd || s.Transport != "stdio":
		v.errf(k+".share", "only applies to stdio servers (command): a remote server already serves each session on a connection of its own")
	case s.Protocol == "2026-07-28":
		v.errf(k+".share", `cannot be shared with protocol = "2026-07-28": that revision keeps the log level and subscriptions per request and stream, which one shared process cannot keep apart; use protocol = "2025-11-25" or "auto" (a shared server is spoken to in 2025-11-25)`)
	}
}

// sandbox checks [servers.sandbox]: the operating system confines only
// the processes aqlguard starts, so it applies to stdio servers; places
// are absolute or in the server's home (~/), ports are TCP ports.
func (v *validator) sandbox(k string, s *config.Server, hasCmd bool) {
	sb := &s.Sandbox
	k += ".sandbox"
	if !hasCmd && v.present(k) {
		v.errf(k, "only applies to servers started with command: aqlguard confines the processes it starts")
	}
	v.enum(k+".mode", &sb.Mode, config.SandboxModes, "auto")
	v.enum(k+".network", &sb.Network, config.SandboxNetworks, "auto")
	for _, list := range []struct {
		key   string
		paths []string
	}{{k + ".read", sb.Read}, {k + ".write", sb.Write}} {
		for i, p := range list.paths {
			if !filepath.IsAbs(p) && p != "~" && !strings.HasPrefix(p, "~/") {
				v.errf(index(list.key, i), "%q is not an absolute path or one in the server's home (~/...)", p)
			}
		}
	}
	for _, list := range []struct {
		key   string
		ports []int
	}{{k + ".connect", sb.Connect}, {k + ".bind", sb.Bind}} {
		for i, p := range list.ports {
			if p < 1 || p > 65535 {
				v.errf(index(list.key, i), "%d is not a TCP port (1-65535)", p)
			}
		}
	}
	if (sb.Network == "none" || sb.Network == "any") && len(sb.Connect) > 0 {
		v.errf(k+".connect", "only applies with network = \"auto\" (network = %q already says where it may connect)", sb.Network)
	}
	if sb.Network == "any" && len(sb.Bind) > 0 {
		v.errf(k+".bind", `does nothing with network = "any", which already lets it listen anywhere`)
	}
}
