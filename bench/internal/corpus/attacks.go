package corpus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The passes: an attack is run on a fresh state ("at first sight"), and
// after a human trusted the servers when they were first seen (a session
// that only lists, every question answered "allow", before the attack).
const (
	FirstSight = "first-sight"
	Trusted    = "trusted"
)

// Verdicts.
const (
	Stopped = "stopped" // refused, blocked, or the config refused
	Flagged = "flagged" // a human was asked, a tool withheld, a warning names it
	Passed  = "passed"  // a harmful request reached the server unasked
	Broken  = "broken"  // the run could not tell (a server that did not start): a bug of the corpus or the runner
)

// Result is one variant of one attack in one pass.
type Result struct {
	ID       string `json:"id"`
	Attack   string `json:"attack"`
	Class    string `json:"class"`
	Layout   string `json:"layout"`
	ReadOnly bool   `json:"read_only"`
	Pass     string `json:"pass"`
	Verdict  string `json:"verdict"`
	// Why is the verdict in one line: what stopped or flagged it, or
	// which harmful request reached its server.
	Why      string `json:"why"`
	Expected string `json:"expected"`
	// Gap is the attack's known gap (Attack.Gap), if any.
	Gap   string       `json:"gap,omitempty"`
	Steps []StepResult `json:"steps,omitempty"`
	// Warnings are the warnings that name the attack: aqlguard's log at
	// start, doctor and policy check.
	Warnings []string `json:"warnings,omitempty"`
	// FirstSight are the questions asked before the model's first request.
	FirstSight []Question `json:"first_sight,omitempty"`
	// Noticed are the steps whose result came back with aqlguard's
	// notice to the model that it holds instructions (issue 30).
	Noticed []string `json:"noticed,omitempty"`
	// NoticeOnly says the variant is flagged by those notices alone:
	// nobody was asked, nothing withheld or warned of.
	NoticeOnly bool `json:"notice_only,omitempty"`
	// Flow is the attack's Flow: what following the session's data
	// should do at its exit. FlowGot is what it did: "asked", "refused",
	// "withheld" or "reached" at the exit, with ", noticed" when a notice
	// came before it; "" when it cannot be told (a question at first
	// sight came first, or the variant broke). FlowMet says FlowGot is
	// what Flow wants.
	Flow    string `json:"flow,omitempty"`
	FlowGot string `json:"flow_got,omitempty"`
	FlowMet bool   `json:"flow_met,omitempty"`

	rogue  []string // the attack's rogue servers
	alerts []string // questions about them outside the harmful steps
}

// StepResult is what became of one step.
type StepResult struct {
	Step    string     `json:"step"`
	Harmful bool       `json:"harmful,omitempty"`
	Reached bool       `json:"reached"`
	Visible bool       `json:"visible"`
	Asked   []Question `json:"asked,omitempty"`
	Answer  string     `json:"answer,omitempty"` // what the client got, shortened
	// Elsewhere names the other server of the attack that got the request
	// instead (a bare name routed by the order of the config).
	Elsewhere string `json:"elsewhere,omitempty"`
	Verdict   string `json:"verdict,omitempty"`
	// Notice is aqlguard's notice to the model beside the result, if any
	// (shortened).
	Notice string `json:"notice,omitempty"`
	// Human is the step's own answer to what it asks (Step.Human).
	Human string `json:"human,omitempty"`
	// Server is the server the step went to.
	Server string `json:"server,omitempty"`
}

// RunAttacks runs every variant in every pass, jobs at a time, each in a
// directory of its own under dir. only, if not empty, keeps the variants
// whose id or class it names.
func RunAttacks(ctx context.Context, env Env, c *Corpus, dir string, passes []string, jobs int, only []string) []Result {
	type job struct {
		v    Variant
		pass string
		i    int
	}
	var todo []job
	for _, v := range c.Variants() {
		if len(only) > 0 && !slices.Contains(only, v.Attack.ID) && !slices.Contains(only, v.Attack.Class) && !slices.Contains(only, v.ID()) {
			continue
		}
		if env.GTFOBinsEvery > 1 && v.Attack.Class == "gtfobins" && gtfoProgram(c, v.Attack)%env.GTFOBinsEvery != 0 {
			continue
		}
		for _, p := range passes {
			todo = append(todo, job{v, p, len(todo)})
		}
	}
	out := make([]Result, len(todo))
	ch := make(chan job)
	var wg sync.WaitGroup
	for range max(jobs, 1) {
		wg.Go(func() {
			for j := range ch {
				d := filepath.Join(dir, fmt.Sprintf("%03d-%s-%s", j.i, strings.NewReplacer("+", "_", "@", "_").Replace(j.v.ID()), j.pass))
				start := time.Now()
				out[j.i] = runVariant(ctx, env, c, j.v, j.pass, d)
				if env.Logf != nil {
					env.Logf("%-8s %-44s %-11s %s (%s)", out[j.i].Verdict, j.v.ID(), j.pass, out[j.i].Why, time.Since(start).Round(time.Millisecond))
				}
			}
		})
	}
	for _, j := range todo {
		ch <- j
	}
	close(ch)
	wg.Wait()
	return out
}

// gtfoProgram is the index of an attack's GTFOBins program: its id
// without the tool it is sent to, in the corpus's order.
func gtfoProgram(c *Corpus, a *Attack) int {
	prog := func(id string) string { return id[:strings.LastIndex(id, "-")] }
	n := -1
	seen := map[string]bool{}
	for _, b := range c.Attacks {
		if b.Class != "gtfobins" || seen[prog(b.ID)] {
			continue
		}
		seen[prog(b.ID)] = true
		n++
		if prog(b.ID) == prog(a.ID) {
			return n
		}
	}
	return n
}

func runVariant(ctx context.Context, env Env, c *Corpus, v Variant, pass, dir string) Result {
	a := v.Attack
	r := Result{ID: v.ID(), Attack: a.ID, Class: a.Class, Layout: v.Layout, ReadOnly: v.ReadOnly, Pass: pass, Expected: a.Expected, Gap: a.Gap, Flow: a.Flow}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return r.broken(err)
	}
	w, err := newWorld(env, dir, c.Home)
	if err != nil {
		return r.broken(err)
	}
	switch a.Kind {
	case "session":
		return runSessionAttack(ctx, w, v, pass, r)
	case "serve":
		return runServeAttack(ctx, w, v, r)
	case "oauth":
		return runOAuthAttack(ctx, w, v, r)
	}
	return r.broken(fmt.Errorf("kind %q", a.Kind))
}

func (r Result) broken(err error) Result {
	r.Verdict, r.Why = Broken, err.Error()
	return r
}

// group is the servers one aqlguard guards.
type group struct {
	name  string
	specs []ServerSpec
}

func groups(v Variant) []group {
	if v.Layout == "one" {
		return []group{{"all", v.Attack.Servers}}
	}
	var gs []group
	for _, s := range v.Attack.Servers {
		gs = append(gs, group{s.Name, []ServerSpec{s}})
	}
	return gs
}

// guards are the aqlguard processes of one session of a variant.
type guards struct {
	all      []*guard
	byServer map[string]*guard
}

func (gs *guards) stop() {
	for _, g := range gs.all {
		g.stop()
	}
}

func (gs *guards) abort() {
	for _, g := range gs.all {
		g.abort()
	}
}

func (gs *guards) stderr() string {
	var b strings.Builder
	for _, g := range gs.all {
		b.WriteString(g.stderr.String())
	}
	return b.String()
}

// startAll starts one aqlguard per group, one after the other (as a
// client starts its entries), and lists what each offers.
func (w *world) startAll(ctx context.Context, configs map[string]string, gs []group, extraEnv ...string) (*guards, error) {
	out := &guards{byServer: map[string]*guard{}}
	for _, grp := range gs {
		var names []string
		for _, s := range grp.specs {
			names = append(names, s.Name)
		}
		g, err := w.startGuard(ctx, grp.name, configs[grp.name], names, extraEnv...)
		if err != nil {
			out.stop()
			return nil, err
		}
		out.all = append(out.all, g)
		for _, n := range names {
			out.byServer[n] = g
		}
		if err := g.list(ctx); err != nil {
			out.stop()
			return nil, fmt.Errorf("%s: %w", grp.name, err)
		}
	}
	return out, nil
}

// settle waits until no question has been asked for a while (a question
// to the command channel is answered at once; what asks is aqlguard
// vetting what it just listed).
func (w *world) settle() {
	n, quiet := len(w.human.questions()), time.Now()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m := len(w.human.questions()); m != n {
			n, quiet = m, time.Now()
		}
		if time.Since(quiet) >= 150*time.Millisecond {
			return
		}
	}
}

// settleReviews waits until every review of a new server that a
// session's guards began has ended (proxy/pins logs both): a review is
// asked a moment after the listing, and on a loaded machine that
// moment can outlast settle's quiet, so that the trusting session would
// end before the human's answer was written and the attack's session
// would meet the review again.
func settleReviews(gs *guards) {
	ends := []string{"a human reviewed a new server's tools", "the human refused a new server's tools",
		"could not ask a human to review a new server", "the approval could not be recorded"}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		log := gs.stderr()
		ended := 0
		for _, e := range ends {
			ended += strings.Count(log, e)
		}
		if ended >= strings.Count(log, "a server seen for the first time") {
			return
		}
	}
}

func runSessionAttack(ctx context.Context, w *world, v Variant, pass string, r Result) Result {
	a := v.Attack
	var httpServers []*exec.Cmd
	defer func() {
		for _, c := range httpServers {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	specs := slices.Clone(a.Servers)
	for i, s := range specs {
		if s.Real != "testserver-http" {
			continue
		}
		cmd, url, err := w.startPlainHTTP(s.Name)
		if err != nil {
			return r.broken(err)
		}
		httpServers = append(httpServers, cmd)
		specs[i].TOML = fmt.Sprintf("url = %s\n%s", tomlString(url), s.TOML)
		specs[i].Real = ""
	}
	v.Attack = &Attack{}
	*v.Attack = *a
	v.Attack.Servers = specs
	gs := groups(v)
	configs := map[string]string{}
	for _, g := range gs {
		path, err := w.writeConfig(g.name, g.specs, v.ReadOnly, "")
		if err != nil {
			return r.broken(err)
		}
		configs[g.name] = path
	}
	names := a.names()
	r.rogue = a.rogueServers()

	if pass == Trusted {
		// The human sees the servers for the first time and trusts them:
		// a session that only lists, every question answered "allow".
		if err := w.human.answer("allow"); err != nil {
			return r.broken(err)
		}
		warm, err := w.startAll(ctx, configs, gs)
		if err != nil {
			return r.startRefused(err)
		}
		w.settle()
		settleReviews(warm)
		warm.abort()
		if err := w.human.answer("deny"); err != nil {
			return r.broken(err)
		}
	}
	asked := len(w.human.questions())
	live, err := w.startAll(ctx, configs, gs)
	if err != nil {
		return r.startRefused(err)
	}
	defer live.abort()
	if a.Flow != "" || slices.ContainsFunc(a.Steps, func(st Step) bool { return st.Human != "" }) {
		// A review at first sight comes a moment after the listing: wait
		// for it, so that a step the human allows does not answer it, and
		// the flow is judged only where nothing stood before the session.
		w.settle()
	}
	qs := w.human.questions()
	r.FirstSight = qs[asked:]
	asked = len(qs)
	r.Warnings = naming(warnings(live.stderr()), names)

	for _, st := range a.Steps {
		sr := w.runStep(ctx, live, st, &asked)
		r.Steps = append(r.Steps, sr)
	}
	live.abort()
	if len(a.Names) > 0 {
		for _, g := range gs {
			r.Warnings = append(r.Warnings, naming(w.doctor(ctx, configs[g.name]), names)...)
			r.Warnings = append(r.Warnings, naming(w.policyCheck(ctx, configs[g.name]), names)...)
		}
	}
	return r.judge()
}

// runStep does one step and judges it.
func (w *world) runStep(ctx context.Context, live *guards, st Step, asked *int) StepResult {
	sr := StepResult{Step: describe(st), Harmful: st.Harmful, Visible: true, Human: st.Human}
	server, tool, _ := strings.Cut(st.Call, ".")
	if st.Call == "" {
		server = st.Server
	}
	if st.RugPull != "" {
		w.rugPull(ctx, live.byServer[st.RugPull], st.RugPull)
		sr.Asked = w.newQuestions(asked)
		return sr
	}
	g := live.byServer[server]
	sr.Server = server
	if st.Human != "" {
		// The human answers this step's questions otherwise; the pass's
		// answer (deny: an attack) comes back after it.
		if err := w.human.answer(st.Human); err != nil {
			sr.Answer, sr.Verdict = err.Error(), Broken
			return sr
		}
		defer func() { _ = w.human.answer("deny") }()
	}
	before := map[string]int{}
	for name, log := range w.logs {
		before[name] = len(receivedBy(log))
	}
	args, err := w.expandJSON(st.Arguments)
	if err != nil {
		sr.Answer, sr.Verdict = err.Error(), Broken
		return sr
	}
	var out outcome
	switch {
	case st.Call != "":
		out = g.call(ctx, server, tool, args)
	case st.Read != "":
		out = g.read(ctx, w.expand(st.Read))
	case st.Prompt != "":
		out = g.prompt(ctx, st.Prompt, args)
	}
	sr.Visible = out.Visible
	sr.Answer = shorten(out.Text, 300)
	sr.Notice = shorten(out.Notice, 200)
	for name, log := range w.logs {
		for _, rec := range receivedBy(log)[before[name]:] {
			if st.Call != "" && rec.Method == "tools/call" && rec.Name == tool ||
				st.Read != "" && rec.Method == "resources/read" ||
				st.Prompt != "" && rec.Method == "prompts/get" && rec.Name == st.Prompt {
				if name == server {
					sr.Reached = true
				} else {
					sr.Elsewhere = name
				}
			}
		}
	}
	sr.Asked = w.newQuestions(asked)
	if !st.Harmful {
		return sr
	}
	switch {
	case sr.Reached:
		sr.Verdict = Passed
	case askedHuman(sr.Asked), !sr.Visible:
		sr.Verdict = Flagged
	case unavailable(out.Text):
		sr.Verdict = Broken
	default:
		sr.Verdict = Stopped
	}
	return sr
}

// askedHuman says whether one of the questions asked for a decision: a
// challenge only shows the human the code that lifts a block (the call was
// stopped, not put to anyone).
func askedHuman(qs []Question) bool {
	for _, q := range qs {
		if q.Kind != "challenge" {
			return true
		}
	}
	return false
}

// unavailable says whether an answer means the server was not there,
// which is no verdict on the attack.
func unavailable(text string) bool {
	for _, s := range []string{"is restarting", "is not available", "unavailable", "did not start", "not ready"} {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

func (w *world) newQuestions(asked *int) []Question {
	qs := w.human.questions()
	if len(qs) <= *asked {
		return nil
	}
	out := qs[*asked:]
	*asked = len(qs)
	return out
}

// rugPull signals a rogue server to change its tools and waits until
// aqlguard has listed them again and what it asks has been answered.
func (w *world) rugPull(ctx context.Context, g *guard, server string) {
	b, err := os.ReadFile(w.pids[server])
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return
	}
	lists := func() int {
		n := 0
		for _, r := range receivedBy(w.logs[server]) {
			if r.Method == "tools/list" {
				n++
			}
		}
		return n
	}
	before := lists()
	_ = syscall.Kill(pid, syscall.SIGUSR1)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && lists() == before; time.Sleep(20 * time.Millisecond) {
	}
	select {
	case <-g.changed:
	case <-time.After(1500 * time.Millisecond):
	}
	w.settle()
	_ = g.list(ctx)
}

// judge gives the variant its verdict. An attack's harmful steps are one
// chain (the read of a secret and the call that sends it): it passed only
// if every harmful step reached its server and nobody was asked. It is
// flagged when the human heard of it: a warning names it, a question came
// at first sight or about one of its rogue servers (a changed tool), or a
// harmful step asked or was withheld from the client. Else it was stopped.
func (r Result) judge() Result {
	var reached, flagged []string
	all := true
	for _, s := range r.Steps {
		if s.Verdict == Broken {
			r.Verdict, r.Why = Broken, "the server was not there: "+s.Step+": "+s.Answer
			return r
		}
		if !s.Harmful {
			for _, q := range s.Asked {
				if slices.Contains(r.rogue, q.Server) {
					r.alerts = append(r.alerts, "asked during "+s.Step+": "+q.String())
				}
			}
			continue
		}
		switch s.Verdict {
		case Passed:
			reached = append(reached, s.Step)
		case Flagged:
			all = false
			if askedHuman(s.Asked) {
				flagged = append(flagged, "asked about "+s.Step+" ("+s.Asked[0].Reason+")")
			} else {
				flagged = append(flagged, "withheld "+s.Step)
			}
		default:
			all = false
		}
	}
	var alerts []string
	if len(r.FirstSight) > 0 {
		alerts = append(alerts, fmt.Sprintf("%d question(s) at first sight: %s", len(r.FirstSight), r.FirstSight[0]))
	}
	alerts = append(alerts, r.alerts...)
	if len(r.Warnings) > 0 {
		alerts = append(alerts, "warned: "+shorten(r.Warnings[0], 160))
	}
	alerts = append(alerts, flagged...)
	for _, s := range r.Steps {
		if s.Notice != "" {
			r.Noticed = append(r.Noticed, s.Step)
		}
	}
	if len(alerts) == 0 && all && len(reached) > 0 && len(r.Noticed) > 0 {
		// Issue 30: a result that holds instructions reaches the model
		// with aqlguard's notice beside it. Where nothing else held the
		// chain, that notice is what flagged it (to the model, not to a
		// human), and the report says so apart.
		r.NoticeOnly = true
		alerts = append(alerts, "noticed to the model only: "+shorten(r.Noticed[0], 120))
	}
	r.FlowGot, r.FlowMet = r.flow()
	switch {
	case len(alerts) > 0:
		r.Verdict, r.Why = Flagged, strings.Join(alerts, "; ")
		if len(reached) > 0 {
			r.Why += "; reached anyway: " + strings.Join(reached, ", ")
		}
	case all && len(reached) > 0:
		r.Verdict, r.Why = Passed, "reached: "+strings.Join(reached, ", ")
	default:
		r.Verdict = Stopped
		for _, s := range r.Steps {
			if s.Harmful && !s.Reached {
				r.Why = "refused: " + s.Step + ": " + shorten(s.Answer, 160)
				if s.Elsewhere != "" {
					r.Why = "not delivered: " + s.Step + " went to " + s.Elsewhere + " instead"
				}
				break
			}
		}
		if len(reached) > 0 {
			r.Why += "; reached: " + strings.Join(reached, ", ")
		}
	}
	return r
}

// flow is what the variant's exit (its last harmful step) did, as
// Result.FlowGot says, and whether that is what the attack's Flow wants.
// It cannot be told where a question the human denied came first (at
// first sight, or on a step before the exit whose answer is not the
// step's own): the session then did not read what the attack has it read.
func (r Result) flow() (string, bool) {
	if r.Flow == "" || len(r.FirstSight) > 0 {
		return "", false
	}
	exit := -1
	for i, s := range r.Steps {
		if s.Harmful {
			exit = i
		}
	}
	if exit < 0 {
		return "", false
	}
	for _, s := range r.Steps[:exit] {
		if askedHuman(s.Asked) && s.Human != "allow" {
			return "", false
		}
	}
	s := r.Steps[exit]
	var got string
	switch {
	case s.Reached:
		got = "reached"
	case askedHuman(s.Asked):
		got = "asked"
	case !s.Visible:
		got = "withheld"
	default:
		got = "refused"
	}
	noticed := false
	for _, b := range r.Steps[:exit] {
		noticed = noticed || b.Notice != ""
	}
	met := false
	switch r.Flow {
	case "ask":
		met = got == "asked"
	case "refuse":
		met = got == "refused"
	case "notice":
		met = noticed
	}
	if noticed {
		got += ", noticed"
	}
	return got, met
}

// startRefused is a variant whose aqlguard would not start: the config was
// refused, which stops everything it holds.
func (r Result) startRefused(err error) Result {
	var se *startError
	if errors.As(err, &se) {
		r.Verdict, r.Why = Stopped, "config refused: "+lastLines(refusal(se.stderr), 2)
		return r
	}
	return r.broken(err)
}

// refusal is the lines of aqlguard's stderr that say why it stopped.
func refusal(stderr string) string {
	var out []string
	for line := range strings.Lines(stderr) {
		if strings.Contains(line, "level=INFO") || strings.TrimSpace(line) == "" {
			continue
		}
		out = append(out, strings.TrimSpace(line))
	}
	if len(out) == 0 {
		return strings.TrimSpace(stderr)
	}
	return strings.Join(out, "\n")
}

// rogueServers are the names of the attack's rogue servers.
func (a *Attack) rogueServers() []string {
	var out []string
	for _, s := range a.Servers {
		if len(s.scenario) > 0 || s.Real == "" && s.TOML == "" {
			out = append(out, s.Name)
		}
	}
	return out
}

// names are the words a warning must hold to name this attack.
func (a *Attack) names() []string {
	if len(a.Names) > 0 {
		return a.Names
	}
	var out []string
	for _, s := range a.Servers {
		if len(s.scenario) > 0 {
			out = append(out, s.Name)
		}
	}
	for _, st := range a.Steps {
		if !st.Harmful {
			continue
		}
		if _, tool, ok := strings.Cut(st.Call, "."); ok {
			out = append(out, tool)
		}
		if st.Prompt != "" {
			out = append(out, st.Prompt)
		}
	}
	return out
}

// naming keeps the lines that hold one of names as a word.
func naming(lines, names []string) []string {
	var out []string
	for _, l := range lines {
		for _, n := range names {
			if containsWord(l, n) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

func containsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		before := j == 0 || !isWordByte(s[j-1])
		after := j+len(w) == len(s) || !isWordByte(s[j+len(w)])
		if before && after {
			return true
		}
		i = j + 1
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b == '-' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// doctor runs `aqlguard doctor` on a config: its warn and FAIL lines.
func (w *world) doctor(ctx context.Context, config string) []string {
	out, _ := w.aqlguard(ctx, "doctor", "--config", config, "--state-dir", w.state, "--timeout", "10s")
	var lines []string
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "warn" && f[0] != "FAIL" || f[1] == "binary" || f[1] == "clients" {
			continue // the machine's own checks: where the binary is, which clients exist
		}
		lines = append(lines, "doctor: "+strings.TrimSpace(line))
	}
	return lines
}

// policyCheck runs `aqlguard policy check --servers`: what it says on
// stderr (its errors and warnings).
func (w *world) policyCheck(ctx context.Context, config string) []string {
	_, stderr := w.aqlguard(ctx, "policy", "check", "--servers", "--config", config)
	var lines []string
	for line := range strings.Lines(stderr) {
		if strings.TrimSpace(line) != "" {
			lines = append(lines, "policy check: "+strings.TrimSpace(line))
		}
	}
	return lines
}

// aqlguard runs an aqlguard command to its end: stdout and stderr.
func (w *world) aqlguard(ctx context.Context, args ...string) (string, string) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.env.Aqlguard, args...)
	cmd.Dir, cmd.Env = w.dir, w.environ()
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 3 * time.Second
	_ = cmd.Run()
	return stdout.String(), stderr.String()
}

// describe is a step in one line.
func describe(st Step) string {
	args := ""
	if len(st.Arguments) > 0 {
		var v any
		if json.Unmarshal(st.Arguments, &v) == nil {
			b, _ := json.Marshal(v)
			args = " " + shorten(string(b), 120)
		}
	}
	switch {
	case st.Call != "":
		return st.Call + args
	case st.Read != "":
		return st.Server + " read " + st.Read
	case st.Prompt != "":
		return st.Server + " prompt " + st.Prompt + args
	case st.RugPull != "":
		return st.RugPull + " changes its tools"
	case st.HTTP != nil:
		return fmt.Sprintf("serve: Host %q Origin %q tools/call %s", st.HTTP.Host, st.HTTP.Origin, st.HTTP.Tool)
	}
	return "?"
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
