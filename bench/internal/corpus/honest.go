package corpus

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The outcomes of an honest call.
const (
	Allowed = "allowed" // reached the server, nobody asked
	Asked   = "asked"   // a human was asked (and allowed it)
	Refused = "refused" // did not reach the server, nobody asked
	Blocked = "blocked" // the agent was blocked (a deny pattern, danger_zone)
)

// HonestCall is what became of one honest call.
type HonestCall struct {
	Server  string     `json:"server"`
	Call    string     `json:"call"`
	Outcome string     `json:"outcome"`
	Asked   []Question `json:"asked,omitempty"`
	// ServerError is the server's own error, when the call reached it and
	// failed there (a flaw of the corpus, not of the guard).
	ServerError string `json:"server_error,omitempty"`
	Answer      string `json:"answer,omitempty"` // what the client got, when not allowed
	// Notice says the result came back with aqlguard's notice that it
	// holds instructions for the model (NoticeText, shortened).
	Notice     bool   `json:"notice,omitempty"`
	NoticeText string `json:"notice_text,omitempty"`
}

// HonestResult is the precision run.
type HonestResult struct {
	Calls []HonestCall `json:"calls"`
	// FirstSight are the questions asked when each server was first
	// listed, before any call (they count as asks).
	FirstSight []Question `json:"first_sight,omitempty"`
	Allowed    int        `json:"allowed"`
	Asked      int        `json:"asked"` // calls that asked, plus the first-sight questions
	Refused    int        `json:"refused"`
	Blocked    int        `json:"blocked"`
	Questions  int        `json:"questions"` // every question, first sight included
	ServerErrs int        `json:"server_errors"`
	// OneClient says every session ran as one client (one state
	// directory), not each as a client of its own.
	OneClient bool `json:"one_client,omitempty"`
	// Notices are the honest results that came back with aqlguard's
	// notice to the model that they hold instructions (issue 30): no
	// question, but a false finding of the result scan all the same.
	Notices int `json:"notices"`
}

// Per100 is n per 100 honest calls.
func (h HonestResult) Per100(n int) float64 {
	if len(h.Calls) == 0 {
		return 0
	}
	return float64(n) * 100 / float64(len(h.Calls))
}

// RunHonest runs every honest session, one after the other, its servers
// each through an aqlguard of its own (as `aqlguard init` wraps a client's
// servers) or one for all (its layout), the human answering "allow".
//
// Each session is a client of its own: its own state directory, so that
// what one session read does not count in the next (issue 30: a new
// session starts clean; the aqlguard processes of one client share what
// their sessions read through the state directory). With oneClient, every
// session shares one state directory: one client all day, whose
// processes aqlguard cannot tell from one long session (a client such as
// Claude Desktop keeps its servers, and so their aqlguards, from one
// conversation to the next).
func RunHonest(ctx context.Context, env Env, c *Corpus, dir string, oneClient bool) (HonestResult, error) {
	res := HonestResult{OneClient: oneClient}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return res, err
	}
	w, err := newWorld(env, dir, c.Home)
	if err != nil {
		return res, err
	}
	if err := w.human.answer("allow"); err != nil {
		return res, err
	}
	asked := 0
	for i, s := range c.Honest {
		start := time.Now()
		n := len(res.Calls)
		if !oneClient {
			w.state = filepath.Join(dir, fmt.Sprintf("state-%02d", i))
			if err := os.MkdirAll(w.state, 0o700); err != nil {
				return res, err
			}
		}
		if err := w.honestSession(ctx, s, &res, &asked); err != nil {
			return res, err
		}
		if env.Logf != nil {
			env.Logf("honest %-12s %3d calls (%s)", s.name(), len(res.Calls)-n, time.Since(start).Round(time.Millisecond))
		}
	}
	for _, c := range res.Calls {
		switch c.Outcome {
		case Allowed:
			res.Allowed++
		case Asked:
			res.Asked++
		case Refused:
			res.Refused++
		case Blocked:
			res.Blocked++
		}
		res.Questions += len(c.Asked)
		if c.ServerError != "" {
			res.ServerErrs++
		}
		if c.Notice {
			res.Notices++
		}
	}
	res.Asked += len(res.FirstSight)
	res.Questions += len(res.FirstSight)
	return res, nil
}

// name is the session's server, or its servers joined.
func (s *Session) name() string {
	var names []string
	for _, sp := range s.specs {
		names = append(names, sp.Name)
	}
	return strings.Join(names, "+")
}

// honestSession runs one session: its servers' aqlguards (one per server,
// or one for all as its layout says), first listed, then its calls.
func (w *world) honestSession(ctx context.Context, s *Session, res *HonestResult, asked *int) error {
	layout := s.Layout
	if layout == "" {
		layout = "separate"
	}
	gs := groups(Variant{Attack: &Attack{Servers: s.Specs()}, Layout: layout})
	configs := map[string]string{}
	for _, g := range gs {
		path, err := w.writeConfig(g.name, g.specs, false, "")
		if err != nil {
			return err
		}
		configs[g.name] = path
	}
	live, err := w.startAll(ctx, configs, gs)
	if err != nil {
		return fmt.Errorf("honest session %s: %w", s.name(), err)
	}
	defer live.stop()
	w.settle()
	res.FirstSight = append(res.FirstSight, w.newQuestions(asked)...)
	for _, st := range s.Calls {
		server, tool := s.Server, st.Call
		if len(s.Servers) > 0 {
			server, tool, _ = strings.Cut(st.Call, ".")
			if st.Call == "" {
				server = st.Server
			}
		}
		st.Call = tool
		res.Calls = append(res.Calls, w.honestCall(ctx, live.byServer[server], server, st, asked))
	}
	return nil
}

func (w *world) honestCall(ctx context.Context, g *guard, server string, st Step, asked *int) HonestCall {
	hc := HonestCall{Server: server, Call: server + "." + strings.TrimPrefix(describe(st), server+" ")}
	before := len(receivedBy(w.logs[server]))
	args, err := w.expandJSON(st.Arguments)
	if err != nil {
		hc.Outcome, hc.Answer = Refused, "corpus: "+err.Error()
		return hc
	}
	var out outcome
	switch {
	case st.Call != "":
		out = g.call(ctx, server, st.Call, args)
	case st.Read != "":
		out = g.read(ctx, w.expand(st.Read))
	case st.Prompt != "":
		out = g.prompt(ctx, st.Prompt, args)
	}
	reached := false
	for _, rec := range receivedBy(w.logs[server])[before:] {
		if rec.Method == "tools/call" && rec.Name == st.Call || rec.Method == "resources/read" && st.Read != "" ||
			rec.Method == "prompts/get" && rec.Name == st.Prompt {
			reached = true
		}
	}
	hc.Asked = w.newQuestions(asked)
	blocked := strings.Contains(out.Text, "PERMISSION_AGENT_BLOCKED")
	for _, q := range hc.Asked {
		blocked = blocked || q.Kind == "challenge"
	}
	switch {
	case blocked:
		hc.Outcome = Blocked
	case reached && len(hc.Asked) == 0:
		hc.Outcome = Allowed
	case len(hc.Asked) > 0:
		hc.Outcome = Asked
	default:
		hc.Outcome = Refused
	}
	if reached && out.IsError {
		hc.ServerError = shorten(out.Text, 200)
	}
	if hc.Outcome != Allowed {
		hc.Answer = shorten(out.Text, 200)
	}
	hc.Notice, hc.NoticeText = out.Notice != "", shorten(out.Notice, 200)
	return hc
}
