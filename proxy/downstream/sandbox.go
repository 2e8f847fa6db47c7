package downstream

import (
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/aqlguard/aqlguard/sandbox"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// SandboxRecorder is told of each stdio server's start with its grant,
// and of each refusal its sandbox is seen to make (the audit log).
type SandboxRecorder interface {
	Started(server string, g sandbox.Grant, e sandbox.Enforcement)
	Refused(r sandbox.Refusal)
}

// reportGrant says at a server's start what it is confined to, and what
// of that this machine does not enforce.
func reportGrant(g sandbox.Grant, rec SandboxRecorder, log *slog.Logger) {
	e := sandbox.Support()
	switch {
	case g.Off:
		log.Warn("the server runs unconfined: its [servers.sandbox] mode is \"off\"; it may read and write all you may")
	case !e.Confines():
		log.Warn("the server runs unconfined: this machine has no sandbox aqlguard can use", "why", e.String(), "grant", g.Summary())
	default:
		log.Info("the server is confined by its sandbox", "grant", g.Summary(), "mechanism", e.Mechanism, "version", e.Version,
			"not_enforced", e.Missing, "profile", g.Profile)
	}
	for _, n := range g.Notes {
		log.Warn("sandbox: not granted", "why", n)
	}
	if rec != nil {
		rec.Started(g.Server, g, e)
	}
}

func reportRefusal(r sandbox.Refusal, rec SandboxRecorder, log *slog.Logger) {
	log.Warn("the sandbox refused the server something outside its grant", "refused", r.String(), "to_grant", r.Fix(), "sensitive", r.Sensitive)
	if rec != nil {
		rec.Refused(r)
	}
}

// noteRefusals tells the client of a failed tools/call what the server's
// sandbox refused while it ran (seen on its stderr, or named in the
// failure itself): the result gets one more text item saying what and
// how to grant it, an error's message one more sentence.
func (s *Server) noteRefusals(method string, began time.Time, res json.RawMessage, err error) (json.RawMessage, error) {
	s.mu.RLock()
	var w *sandbox.Watch
	if s.conn != nil {
		w = s.conn.sandbox
	}
	s.mu.RUnlock()
	if w == nil || method != mcpmethod.ToolsCall {
		return res, err
	}
	if err == nil {
		// A result that did not fail gets no note, whatever it says: the
		// common case, one look at its members and no scan of its text.
		if isErr, _ := rawjson.Lookup(res, "isError"); string(isErr) != "true" {
			return res, err
		}
		if !sandbox.MentionsDenial(res) && len(w.Since(began)) == 0 {
			return res, err
		}
	}
	// What the failure names, and what the server was refused while it
	// ran (its stderr), each once.
	var named []sandbox.Refusal
	read := func(text string) {
		all, fresh := w.Read(text)
		for _, r := range fresh {
			reportRefusal(r, s.pool.opts.Sandbox, s.log)
		}
		named = append(named, all...)
	}
	refused := func() []sandbox.Refusal {
		out := named
		for _, r := range w.Since(began) {
			if !slices.ContainsFunc(out, func(n sandbox.Refusal) bool { return n.String() == r.String() }) {
				out = append(out, r)
			}
		}
		return out
	}
	var werr *jsonrpc.Error
	switch {
	case errors.As(err, &werr):
		read(werr.Message)
		if rs := refused(); len(rs) > 0 {
			e := *werr
			e.Message += " — " + sentences(rs)
			return res, &e
		}
	case err == nil: // a failed result (isError, above)
		content, _ := rawjson.Lookup(res, "content")
		var items []json.RawMessage
		if json.Unmarshal(content, &items) != nil {
			return res, err
		}
		for _, it := range items {
			var t struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if json.Unmarshal(it, &t) == nil && t.Type == "text" {
				read(t.Text)
			}
		}
		rs := refused()
		if len(rs) == 0 {
			return res, err
		}
		note, _ := json.Marshal(map[string]string{"type": "text", "text": sentences(rs)})
		items = append(items, note)
		if out, serr := rawjson.Set(res, "content", items); serr == nil {
			return out, nil
		}
	}
	return res, err
}

func sentences(rs []sandbox.Refusal) string {
	var out string
	for i, r := range rs {
		if i > 0 {
			out += "\n"
		}
		out += r.Sentence()
	}
	return out
}
