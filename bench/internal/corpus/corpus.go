// Package corpus runs aqlguard's two corpora (bench/corpus): the attack
// corpus, where each attack from the public MCP attack taxonomies is a
// rogue server (internal/fixture/rogueserver) or a real one plus the calls a
// manipulated model makes, and the precision corpus, the honest calls a
// developer's agent makes in a day against the real npm servers. aqlguard
// runs with the default policy: the config adds only the servers and a
// command channel that stands in for the human, records every question
// and answers "deny" (attacks) or "allow" (honest work).
//
// An attack is stopped (refused, blocked, config refused), flagged (a
// human was asked, a tool was withheld from tools/list, a warning at
// start or in doctor names it) or passed (a harmful call reached the
// server: the server's own record of what it received says so). An honest
// call is allowed, asked, refused or blocked.
package corpus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Attack is one attack of the corpus, as written in bench/corpus/attacks.
type Attack struct {
	ID     string `json:"id"`
	Class  string `json:"class"`
	Title  string `json:"title"`
	Source string `json:"source"`
	// Kind says how it is tried: "session" (the default: a client session
	// through `aqlguard run`; a config aqlguard refuses to start on stops
	// it), "serve" (HTTP requests to `aqlguard serve`), "oauth" (a remote
	// server whose OAuth metadata is the attack).
	Kind    string       `json:"kind,omitempty"`
	Servers []ServerSpec `json:"servers"`
	// Layouts are how the client runs aqlguard over several servers:
	// "separate" (one aqlguard per server sharing one state directory, as
	// `aqlguard init` wraps a client's entries; each is in transparent
	// mode) and "one" (one `aqlguard run` with every server: semantic mode
	// from two servers on). Default: both for several servers, "separate"
	// for one.
	Layouts []string `json:"layouts,omitempty"`
	// ReadOnly says whether the variant where every rogue tool claims
	// readOnlyHint is run too; default: whenever a rogue server has tools.
	ReadOnly *bool  `json:"read_only_variant,omitempty"`
	Steps    []Step `json:"steps,omitempty"`
	// Config is TOML the attack adds (kind "serve" only): the drifted
	// configuration that is the attack.
	Config string `json:"config,omitempty"`
	// Listen is serve's --listen for kind "serve" (default 127.0.0.1:PORT).
	Listen string `json:"listen,omitempty"`
	// Authorize is the authorization endpoint a kind "oauth" server hands
	// out; {{marker}} is a file that exists only if its command ran.
	Authorize string `json:"authorize,omitempty"`
	// Names are the words a warning (at start, in doctor, in policy check)
	// must hold to flag this attack; default: the rogue servers' names and
	// the tools and prompts the harmful steps use.
	Names []string `json:"flag_names,omitempty"`
	// Expected is which mechanism should stop it (for the report only).
	Expected string `json:"expected"`
	// Flow is what following a session's data (issue 30) does at the
	// attack's exit, its last harmful step, once no first-sight question
	// stands in the way: "ask" (the session holds private data and
	// untrusted content, and the step sends data out: the human is
	// asked), "refuse" (the step carries a secret the session saw in a
	// result: refused without a question) or "notice" (a result of the
	// chain carried aqlguard's notice to the model that it holds
	// instructions). The report and e2e TestCorpus hold each variant to
	// it (Result.FlowGot).
	Flow string `json:"flow,omitempty"`
	// Gap, when set, says in words why the guard is known not to stop
	// the attack once the human trusted its servers (the issue that will
	// give it what it lacks): its trusted pass may pass, and the report
	// and e2e TestCorpus hold it apart from a miss. At first sight it is
	// held like any other.
	Gap string `json:"gap,omitempty"`
}

// ServerSpec is one server of an attack, by its name in aqlguard's config.
type ServerSpec struct {
	Name string `json:"name"`
	// Rogue is a scenario: the name of one in a corpus file's "scenarios",
	// or one written in place.
	Rogue json.RawMessage `json:"rogue,omitempty"`
	// Real is a real server: "filesystem", "memory", "everything",
	// "testserver", or "testserver-http": internal/fixture/testserver over
	// Streamable HTTP on an address of this machine that is not a
	// loopback one, configured by url = "http://..." (a remote server on
	// the network).
	Real string `json:"real,omitempty"`
	// Root is the filesystem server's allowed directory: "project" (the
	// default) or "home".
	Root string `json:"root,omitempty"`
	// TOML is what is added to a testserver-http entry (headers, say).
	TOML string `json:"toml,omitempty"`

	scenario json.RawMessage // resolved by Load
}

// Step is one thing the manipulated model (or the attacker) does.
type Step struct {
	// Call is "server.tool"; Arguments its arguments.
	Call      string          `json:"call,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Read is a resources/read of this URI, Prompt a prompts/get of this
	// name (with Arguments), both at Server.
	Read   string `json:"read,omitempty"`
	Prompt string `json:"prompt,omitempty"`
	Server string `json:"server,omitempty"`
	// RugPull signals this rogue server to change its tools now.
	RugPull string `json:"rug_pull,omitempty"`
	// HTTP is a request to `aqlguard serve` (kind "serve").
	HTTP *HTTPStep `json:"http,omitempty"`
	// Harmful marks the steps whose arrival at the server is the harm.
	Harmful bool `json:"harmful,omitempty"`
	// Human is what the human answers to the questions this step asks,
	// when it is not the pass's answer ("deny" in an attack): "allow"
	// is the human who lets the agent read ~/.ssh/id_rsa because it gave
	// a reason, so that what comes after is judged with the key read.
	Human string `json:"human,omitempty"`
	Note  string `json:"note,omitempty"`
}

// HTTPStep is a session opened on `aqlguard serve` with these headers, and
// one tools/call in it.
type HTTPStep struct {
	Host   string `json:"host,omitempty"`
	Origin string `json:"origin,omitempty"`
	// NoToken leaves the bearer token out.
	NoToken   bool            `json:"no_token,omitempty"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Variant is one way an attack is run.
type Variant struct {
	Attack   *Attack
	Layout   string // "separate" or "one"
	ReadOnly bool   // every rogue tool says readOnlyHint
}

// ID names the variant: the attack's id, "+ro" for the read-only claim,
// "@one" for one aqlguard over several servers.
func (v Variant) ID() string {
	id := v.Attack.ID
	if v.ReadOnly {
		id += "+ro"
	}
	if v.Layout == "one" && len(v.Attack.Servers) > 1 {
		id += "@one"
	}
	return id
}

// Session is one honest session: a server and the calls made to it, in
// order, as a developer's agent makes them; or several servers, whose
// calls name "server.tool", run as Layout says.
type Session struct {
	Server string `json:"server,omitempty"` // its name in aqlguard's config
	Real   string `json:"real,omitempty"`   // filesystem, memory, everything, testserver
	// Rogue is a scenario (internal/fixture/rogueserver) in place of a real
	// server: the name of one in an attack file's "scenarios", or one
	// written in place. Honest, here: a server that reproduces a
	// profiled server's definitions (the fetch server) and answers what
	// the real one would.
	Rogue json.RawMessage `json:"rogue,omitempty"`
	// Servers, instead of Server, Real and Rogue: several servers in one
	// session (a client that has them all).
	Servers []ServerSpec `json:"servers,omitempty"`
	// Layout is how the client runs aqlguard over Servers: "separate"
	// (the default) or "one", as for an attack.
	Layout string `json:"layout,omitempty"`
	Calls  []Step `json:"calls"`
	file   string
	specs  []ServerSpec // the servers, their scenarios resolved (check)
}

// Specs are the session's servers, as Load resolved them.
func (s *Session) Specs() []ServerSpec { return s.specs }

// Corpus is everything under a corpus directory.
type Corpus struct {
	Attacks []*Attack
	Honest  []*Session
	// Home is the tree of the user's home directory the servers see (the
	// project the honest calls work in is Home's "project/"), path →
	// content.
	Home map[string]string
}

// Classes is MCPSecBench's 17 attack classes and the ones added from
// Invariant Labs, Trail of Bits and GTFOBins, in report order.
var Classes = []string{
	"prompt-injection", "tool-misuse", "schema-inconsistency", "slash-command-overlap",
	"vulnerable-client", "mcp-rebinding", "mitm", "tool-shadowing", "data-exfiltration",
	"tool-name-squatting", "indirect-prompt-injection", "server-name-squatting",
	"configuration-drift", "sandbox-escape", "tool-poisoning", "vulnerable-server", "rug-pull",
	"line-jumping", "gtfobins",
}

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// Load reads a corpus directory: attacks/*.json, honest/*.json, home.json.
func Load(dir string) (*Corpus, error) {
	c := &Corpus{}
	if err := readStrict(filepath.Join(dir, "home.json"), &c.Home); err != nil {
		return nil, err
	}
	scenarios := map[string]json.RawMessage{}
	files, _ := filepath.Glob(filepath.Join(dir, "attacks", "*.json"))
	sort.Strings(files)
	var all []*Attack
	for _, f := range files {
		var af struct {
			Scenarios map[string]json.RawMessage `json:"scenarios"`
			Attacks   []*Attack                  `json:"attacks"`
		}
		if err := readStrict(f, &af); err != nil {
			return nil, err
		}
		for name, s := range af.Scenarios {
			if _, dup := scenarios[name]; dup {
				return nil, fmt.Errorf("%s: scenario %q defined twice", f, name)
			}
			scenarios[name] = s
		}
		all = append(all, af.Attacks...)
	}
	ids := map[string]bool{}
	for _, a := range all {
		if err := a.resolve(scenarios); err != nil {
			return nil, err
		}
		if ids[a.ID] {
			return nil, fmt.Errorf("attack %q twice", a.ID)
		}
		ids[a.ID] = true
	}
	c.Attacks = all

	files, _ = filepath.Glob(filepath.Join(dir, "honest", "*.json"))
	sort.Strings(files)
	for _, f := range files {
		var s Session
		if err := readStrict(f, &s); err != nil {
			return nil, err
		}
		s.file = f
		if err := s.check(scenarios); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		c.Honest = append(c.Honest, &s)
	}
	if len(c.Attacks) == 0 || len(c.Honest) == 0 {
		return nil, fmt.Errorf("%s: no attacks or no honest sessions", dir)
	}
	return c, nil
}

// readStrict decodes one JSON value from path; unknown keys are errors,
// so a typo cannot silently drop a payload.
func readStrict(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func (a *Attack) resolve(scenarios map[string]json.RawMessage) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("attack %q: %s", a.ID, fmt.Sprintf(format, args...))
	}
	if !idPattern.MatchString(a.ID) {
		return bad("id must be lowercase letters, digits and hyphens")
	}
	if !slices.Contains(Classes, a.Class) {
		return bad("unknown class %q", a.Class)
	}
	if !strings.HasPrefix(a.Source, "https://") || a.Expected == "" || a.Title == "" {
		return bad("title, source (an https URL) and expected are required")
	}
	switch a.Kind {
	case "":
		a.Kind = "session"
	case "session", "serve", "oauth":
	default:
		return bad("unknown kind %q", a.Kind)
	}
	if a.Config != "" && a.Kind != "serve" {
		return bad("config is for kind serve only")
	}
	names := map[string]bool{}
	for i := range a.Servers {
		s := &a.Servers[i]
		if names[s.Name] || !regexp.MustCompile(`^[a-z][a-z0-9]{0,31}$`).MatchString(s.Name) {
			return bad("server name %q (twice, or not 1-32 lowercase letters and digits)", s.Name)
		}
		names[s.Name] = true
		n := 0
		if len(s.Rogue) > 0 {
			n++
			if err := s.resolve(scenarios); err != nil {
				return bad("%v", err)
			}
		}
		if s.Real != "" {
			n++
			if !slices.Contains([]string{"filesystem", "memory", "everything", "testserver", "testserver-http"}, s.Real) {
				return bad("server %s: unknown real server %q", s.Name, s.Real)
			}
		}
		if s.TOML != "" && s.Real != "testserver-http" {
			return bad("server %s: toml adds to a testserver-http entry only", s.Name)
		}
		if n != 1 && a.Kind != "oauth" {
			return bad("server %s: want exactly one of rogue and real", s.Name)
		}
		if s.Root != "" && s.Root != "home" && s.Root != "project" {
			return bad("server %s: root %q", s.Name, s.Root)
		}
	}
	harmful := 0
	for i, st := range a.Steps {
		n := count(st.Call != "", st.Read != "", st.Prompt != "", st.RugPull != "", st.HTTP != nil)
		if n != 1 {
			return bad("step %d: want exactly one of call, read, prompt, rug_pull, http", i)
		}
		server := st.Server
		if st.Call != "" {
			var ok bool
			server, _, ok = strings.Cut(st.Call, ".")
			if !ok {
				return bad("step %d: call %q is not server.tool", i, st.Call)
			}
		}
		if st.RugPull != "" {
			server = st.RugPull
		}
		if st.HTTP == nil && !names[server] {
			return bad("step %d: no server %q", i, server)
		}
		if st.Harmful {
			harmful++
		}
		if st.Human != "" && st.Human != "allow" && st.Human != "deny" {
			return bad("step %d: human %q (allow or deny)", i, st.Human)
		}
	}
	switch a.Flow {
	case "", "ask", "refuse", "notice":
	default:
		return bad("flow %q (ask, refuse or notice)", a.Flow)
	}
	if a.Flow != "" && a.Kind != "session" {
		return bad("flow is for kind session only")
	}
	switch a.Kind {
	case "session", "serve":
		if harmful == 0 {
			return bad("no harmful step")
		}
	case "oauth":
		if a.Authorize == "" || !strings.Contains(a.Authorize, "{{marker}}") {
			return bad("kind oauth needs authorize with {{marker}}")
		}
	}
	for _, l := range a.Layouts {
		if l != "separate" && l != "one" {
			return bad("layout %q", l)
		}
	}
	return nil
}

// resolve finds a rogue server's scenario: a name in scenarios, or the
// object written in place.
func (s *ServerSpec) resolve(scenarios map[string]json.RawMessage) error {
	if s.Rogue[0] != '"' {
		s.scenario = s.Rogue
		return nil
	}
	var ref string
	_ = json.Unmarshal(s.Rogue, &ref)
	sc, ok := scenarios[ref]
	if !ok {
		return fmt.Errorf("no scenario %q", ref)
	}
	s.scenario = sc
	return nil
}

// honestReal are the real servers an honest session may use.
var honestReal = []string{"filesystem", "memory", "everything", "testserver"}

func (s *Session) check(scenarios map[string]json.RawMessage) error {
	several := len(s.Servers) > 0
	if several {
		if s.Server != "" || s.Real != "" || len(s.Rogue) > 0 {
			return errors.New("servers, or server with real or rogue: not both")
		}
		s.specs = slices.Clone(s.Servers)
	} else {
		if s.Server == "" || s.Layout != "" {
			return errors.New("server is required (layout is for servers)")
		}
		s.specs = []ServerSpec{{Name: s.Server, Real: s.Real, Rogue: s.Rogue}}
	}
	names := map[string]bool{}
	for i := range s.specs {
		sp := &s.specs[i]
		if sp.Name == "" || names[sp.Name] {
			return fmt.Errorf("server %q: no name, or twice", sp.Name)
		}
		names[sp.Name] = true
		if err := checkHonestServer(sp, scenarios); err != nil {
			return err
		}
	}
	if s.Layout != "" && s.Layout != "separate" && s.Layout != "one" {
		return fmt.Errorf("layout %q", s.Layout)
	}
	for i, c := range s.Calls {
		if count(c.Call != "", c.Read != "", c.Prompt != "") != 1 {
			return fmt.Errorf("call %d: want exactly one of call, read, prompt", i)
		}
		server, _, dotted := strings.Cut(c.Call, ".")
		switch {
		case c.Call != "" && several && (!dotted || !names[server]):
			return fmt.Errorf("call %d: %q: a session of several servers names server.tool", i, c.Call)
		case c.Call != "" && !several && dotted:
			return fmt.Errorf("call %d: %q: honest calls name the tool alone", i, c.Call)
		case c.Call == "" && several && !names[c.Server]:
			return fmt.Errorf("call %d: a read or a prompt names its server", i)
		}
		if c.RugPull != "" || c.HTTP != nil || c.Harmful || c.Human != "" {
			return fmt.Errorf("call %d: an honest call is a call, a read or a prompt", i)
		}
	}
	return nil
}

// checkHonestServer checks one server of an honest session: a real one
// of honestReal, or a rogue scenario.
func checkHonestServer(sp *ServerSpec, scenarios map[string]json.RawMessage) error {
	if len(sp.Rogue) > 0 {
		if sp.Real != "" {
			return fmt.Errorf("server %s: want one of real and rogue", sp.Name)
		}
		return sp.resolve(scenarios)
	}
	if !slices.Contains(honestReal, sp.Real) {
		return fmt.Errorf("server %s: real (filesystem, memory, everything, testserver) or rogue is required", sp.Name)
	}
	return nil
}

// Variants expands the attacks into the variants run: the read-only claim
// for every attack whose rogue servers offer tools, and both layouts for
// attacks over several servers.
func (c *Corpus) Variants() []Variant {
	var out []Variant
	for _, a := range c.Attacks {
		layouts := a.Layouts
		if len(layouts) == 0 {
			layouts = []string{"separate"}
			if len(a.Servers) > 1 && a.Kind == "session" {
				layouts = []string{"separate", "one"}
			}
		}
		ro := []bool{false}
		if a.hasRogueTools() && (a.ReadOnly == nil || *a.ReadOnly) {
			ro = append(ro, true)
		}
		for _, r := range ro {
			for _, l := range layouts {
				out = append(out, Variant{Attack: a, Layout: l, ReadOnly: r})
			}
		}
	}
	return out
}

func (a *Attack) hasRogueTools() bool {
	for _, s := range a.Servers {
		if len(s.scenario) == 0 {
			continue
		}
		var sc struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if json.Unmarshal(s.scenario, &sc) == nil && len(sc.Tools) > 0 {
			return true
		}
	}
	return false
}

// count is how many of set are true.
func count(set ...bool) int {
	n := 0
	for _, b := range set {
		if b {
			n++
		}
	}
	return n
}
