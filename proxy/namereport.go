package proxy

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/names"
	"github.com/aqlguard/aqlguard/store"
)

// NameReport records in the state the names of the tools and prompts
// each server of this process offers its client, and warns, once per
// finding, of names two of the client's servers claim and of server
// names that pass for another's (proxy/names). The client's servers are
// this process's and those other processes sharing the state recorded
// for the same principal: a client config with several `aqlguard wrap`
// entries runs one aqlguard per server, each knowing only its own, and
// the client shows their tools side by side. It is a report: nothing is
// refused for it.
type NameReport struct {
	State store.State
	// Principal is the principal whose client the servers serve.
	Principal string
	// Process names this process in the records (host/pid).
	Process string
	Log     *slog.Logger
	// Servers are the names of this process's configured servers now.
	Servers func() []string
	now     func() time.Time

	mu       sync.Mutex
	reported map[string]bool
	// mine are the names this process's servers listed last, and
	// checked when each server's tools or prompts were last compared.
	mine    map[string]store.ServerNames
	checked map[string]time.Time
	wg      sync.WaitGroup
}

// RecordedWithin is how long a server recorded by another process counts
// as one of the client's servers: a server removed from a client config
// is not reported against forever.
const RecordedWithin = 30 * 24 * time.Hour

// reseenEvery is how often an unchanged server's record is written again
// to say it is still there.
const reseenEvery = 24 * time.Hour

// reportTimeout bounds one report's reads and writes of the state.
const reportTimeout = 10 * time.Second

// recheckAfter is how soon an unchanged listing is compared again: the
// sessions of serve each list their servers, and a client may list
// prompts as often as it likes.
const recheckAfter = time.Minute

func (r *NameReport) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// Start reports the server names that pass for each other among this
// process's servers, the other servers recorded for the principal, and
// the well-known servers'.
func (r *NameReport) Start(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	var recorded []store.ServerNames
	err := r.State.Load(ctx, func(v store.View) (err error) {
		recorded, err = v.ServerNames(r.Principal)
		return err
	})
	if err != nil {
		r.Log.Warn("the names other aqlguard processes recorded could not be read; server names are compared among this process's alone", "err", err)
	}
	r.report(nil, r.others(recorded))
}

// Listed records the names of a server's tools or prompts, as it listed
// them, and reports what they collide with. It runs beside the listing
// (Close waits for it): a slow state holds no client request up.
func (r *NameReport) Listed(server string, kind names.Kind, list []string) {
	list = slices.Clone(list)
	slices.Sort(list)
	list = slices.Compact(list)
	if list == nil {
		list = []string{}
	}
	r.mu.Lock()
	n, key, now := r.mine[server], server+"\x00"+string(kind), r.clock()
	had := n.Tools
	if kind == names.Prompt {
		had = n.Prompts
	}
	if (kind == names.Tool || n.PromptsListed) && had != nil && slices.Equal(had, list) && now.Sub(r.checked[key]) < recheckAfter {
		r.mu.Unlock()
		return // unchanged, and compared a moment ago
	}
	if r.checked == nil {
		r.checked = map[string]time.Time{}
	}
	r.checked[key] = now
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.listed(server, kind, list)
	}()
}

// Close waits for the reports under way.
func (r *NameReport) Close() { r.wg.Wait() }

func (r *NameReport) listed(server string, kind names.Kind, list []string) {
	ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
	defer cancel()
	r.mu.Lock()
	if r.mine == nil {
		r.mine = map[string]store.ServerNames{}
	}
	n := r.mine[server]
	n.Principal, n.Server = r.Principal, server
	if kind == names.Prompt {
		n.Prompts, n.PromptsListed = list, true
	} else {
		n.Tools = list
	}
	r.mine[server] = n
	r.mu.Unlock()

	now := r.clock()
	var recorded []store.ServerNames
	_, err := r.State.Commit(ctx, func(v store.View) (store.Changes, error) {
		all, err := v.ServerNames(r.Principal)
		if err != nil {
			return store.Changes{}, err
		}
		recorded = all
		rec := n
		rec.Process, rec.SeenAt = r.Process, now
		for _, old := range all {
			if old.Server != server {
				continue
			}
			if !rec.PromptsListed && old.PromptsListed { // prompts not listed here yet: what was
				rec.Prompts, rec.PromptsListed = old.Prompts, true
			}
			if rec.Tools == nil {
				rec.Tools = old.Tools
			}
			if rec.Same(old) && now.Sub(old.SeenAt) < reseenEvery {
				return store.Changes{}, nil
			}
		}
		return store.Changes{ServerNames: []store.ServerNames{rec}}, nil
	})
	if err != nil {
		r.Log.Warn("the names a server offers could not be recorded; other aqlguard processes of this client do not see them", "server", server, "err", err)
	}
	r.report([]string{server}, r.others(recorded))
}

// others are the recorded servers of other processes that count as the
// client's: not one of this process's servers, seen within
// RecordedWithin.
func (r *NameReport) others(recorded []store.ServerNames) []store.ServerNames {
	mine := r.Servers()
	now := r.clock()
	var out []store.ServerNames
	for _, n := range recorded {
		if !slices.Contains(mine, n.Server) && now.Sub(n.SeenAt) < RecordedWithin {
			out = append(out, n)
		}
	}
	return out
}

// report logs what was not reported yet: the collisions that involve one
// of about (nil: every server of this process), and the server names
// that pass for another's.
func (r *NameReport) report(about []string, others []store.ServerNames) {
	mine := r.Servers()
	if about == nil {
		about = mine
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reported == nil {
		r.reported = map[string]bool{}
	}
	var listings []names.Listing
	for _, s := range mine {
		if n, ok := r.mine[s]; ok {
			listings = append(listings, names.Listing{Server: s, Tools: n.Tools, Prompts: n.Prompts})
		}
	}
	elsewhere := map[string]string{} // server → the process that recorded it
	for _, n := range others {
		listings = append(listings, names.Listing{Server: n.Server, Tools: n.Tools, Prompts: n.Prompts})
		elsewhere[n.Server] = n.Server + " (" + n.Process + ")"
	}
	ours := func(ss ...string) bool {
		return slices.ContainsFunc(ss, func(s string) bool { return slices.Contains(about, s) })
	}
	for _, c := range names.Collisions(listings) {
		servers := c.Servers()
		if r.reported[c.Key()] || !ours(servers...) {
			continue
		}
		r.reported[c.Key()] = true
		attrs := []any{"kind", string(c.Kind), "collision", c.String(), "servers", servers}
		var other []string
		for _, s := range servers {
			if e, ok := elsewhere[s]; ok {
				other = append(other, e)
			}
		}
		if other != nil {
			attrs = append(attrs, "recorded_by_other_processes", other)
		}
		r.Log.Warn("two servers of this client offer one name, or names that look alike: the model may call one for the other, "+
			"and one may be passing for the other (aqlguard doctor lists every such name)", attrs...)
	}
	all := slices.Clone(mine)
	for _, n := range others {
		all = append(all, n.Server)
	}
	for _, im := range names.Imitations(all) {
		pair := []string{im.Of, im.Name}
		slices.Sort(pair)
		key := "server\x00" + pair[0] + "\x00" + pair[1]
		if r.reported[key] || !ours(im.Name) && (im.WellKnown || !ours(im.Of)) {
			continue
		}
		r.reported[key] = true
		r.Log.Warn("a server's name passes for another's: check that each is the server you meant to install", "imitation", im.String())
	}
}

// Listed is what a started server offers, as names: its tools as its
// state holds them, and its prompts, listed now (every page, up to
// maxListedPages) if it declared them. For the commands that look at
// servers without a client (doctor, policy check --servers); a server
// that is not ready offers nothing.
func Listed(ctx context.Context, srv *downstream.Server) names.Listing {
	l := names.Listing{Server: srv.Name}
	st := srv.State()
	if st.Status != downstream.Ready {
		return l
	}
	for _, t := range st.Tools {
		l.Tools = append(l.Tools, t.Name)
	}
	if raw, ok := st.Capabilities["prompts"]; !ok || string(raw) == "null" {
		return l
	}
	cursor := ""
	for range maxListedPages {
		params := json.RawMessage(`{}`)
		if cursor != "" {
			params, _ = json.Marshal(map[string]string{"cursor": cursor})
		}
		res, err := srv.Request(ctx, mcpmethod.PromptsList, params)
		if err != nil {
			return l
		}
		var page struct {
			Prompts []struct {
				Name string `json:"name"`
			} `json:"prompts"`
			NextCursor string `json:"nextCursor"`
		}
		if json.Unmarshal(res, &page) != nil {
			return l
		}
		for _, p := range page.Prompts {
			l.Prompts = append(l.Prompts, p.Name)
		}
		if page.NextCursor == "" || page.NextCursor == cursor {
			return l
		}
		cursor = page.NextCursor
	}
	return l
}

// maxListedPages bounds the pages Listed reads of a server's prompts.
const maxListedPages = 64
