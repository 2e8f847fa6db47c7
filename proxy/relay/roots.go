package relay

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/policy/paths"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The client's roots, as the guard judges path arguments against them:
// what the client last answered to roots/list, whoever asked (a server,
// through the relay, or the guard itself), forgotten when the client
// says they changed (notifications/roots/list_changed).

// askRootsFor bounds the guard's own roots/list to the client: a client
// that does not answer holds up the call that needed its roots this
// long, and then the call is judged without them.
const askRootsFor = 5 * time.Second

// askRootsAgainAfter is how long an ask that failed (an error, no answer
// in time) is not repeated, unless the client says its roots changed:
// one client that never answers costs one wait a minute, not one a call.
const askRootsAgainAfter = time.Minute

// clientRoots is what the session knows of its client's roots.
type clientRoots struct {
	mu sync.Mutex
	// gen counts the client's roots/list_changed: an answer to a
	// roots/list sent before the latest is stale, and not kept.
	gen   uint64
	known bool
	roots []string // clean absolute paths, sorted
	// asking is closed when the guard's own ask ends; nil when none runs.
	asking chan struct{}
	// failed is when the guard's own ask last failed, in generation
	// failedGen (zero: it has not).
	failed    time.Time
	failedGen uint64
}

// generation is the current generation, for record.
func (r *clientRoots) generation() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen
}

// forget drops the roots: the client says they changed.
func (r *clientRoots) forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	r.known, r.roots = false, nil
}

// record keeps a roots/list result asked in generation gen. Each root is
// a file: URI read as the path it names; one that names no local path
// (another host, another scheme) is left out, which judges fewer paths
// inside the roots, never more. A result that is not a list of roots
// keeps nothing.
func (r *clientRoots) record(gen uint64, result json.RawMessage) bool {
	roots, ok := rootPaths(result)
	if !ok {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen {
		return false // the client said its roots changed since
	}
	r.known, r.roots = true, roots
	return true
}

// rootPaths reads a roots/list result.
func rootPaths(result json.RawMessage) ([]string, bool) {
	raw, ok := rawjson.Lookup(result, "roots")
	if !ok {
		return nil, false
	}
	var list []struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, false
	}
	roots := []string{}
	for _, root := range list {
		if !strings.HasPrefix(strings.ToLower(root.URI), "file:") {
			continue
		}
		if p := paths.Canonical(root.URI, "", ""); p.OK {
			roots = append(roots, p.Clean)
		}
	}
	slices.Sort(roots)
	return slices.Compact(roots), true
}

// noteRoots records the client's answer to a roots/list it was sent in
// generation gen, whoever sent it.
func (s *Session) noteRoots(method string, gen uint64, result json.RawMessage) {
	if method != "roots/list" {
		return
	}
	if !s.roots.record(gen, result) {
		s.log.Debug("the client's roots/list answer was not kept (not a list of roots, or its roots changed since)")
	}
}

// ClientRoots are the roots the client last answered (clean absolute
// paths, sorted), and whether it has answered since it last said they
// changed. Nothing is asked: see AskClientRoots.
func (s *Session) ClientRoots() (roots []string, known bool) {
	s.roots.mu.Lock()
	defer s.roots.mu.Unlock()
	return slices.Clone(s.roots.roots), s.roots.known
}

// AskClientRoots are the client's roots, asked of it (roots/list) when
// no answer is known: for the guard, when no server has asked. ctx is
// the call's that needs them. known is false when the client did not
// declare the roots capability (a 2026-07-28 client: in the call ctx
// belongs to), did not answer within askRootsFor, answered with an
// error, or failed to less than askRootsAgainAfter ago in the same
// generation. One ask runs at a time per session: calls that need the
// roots meanwhile wait for its answer.
func (s *Session) AskClientRoots(ctx context.Context) (roots []string, known bool) {
	for {
		r := &s.roots
		r.mu.Lock()
		if r.known {
			defer r.mu.Unlock()
			return slices.Clone(r.roots), true
		}
		if !r.failed.IsZero() && r.failedGen == r.gen && time.Since(r.failed) < askRootsAgainAfter {
			r.mu.Unlock()
			return nil, false
		}
		if wait := r.asking; wait != nil {
			r.mu.Unlock()
			select {
			case <-wait:
				continue // answered, or failed: read again
			case <-ctx.Done():
				return nil, false
			}
		}
		done := make(chan struct{})
		r.asking, r.failed = done, time.Time{}
		gen := r.gen
		r.mu.Unlock()

		actx, cancel := context.WithTimeout(ctx, askRootsFor)
		res, err := s.askRoots(actx)
		cancel()
		kept := err == nil && r.record(gen, res)
		r.mu.Lock()
		r.asking = nil
		if !kept && ctx.Err() == nil {
			r.failed, r.failedGen = time.Now(), gen
		}
		roots, known = slices.Clone(r.roots), r.known
		r.mu.Unlock()
		close(done)
		switch {
		case err != nil && !errors.Is(err, errNoRootsCapability):
			s.log.Warn("the client's roots could not be read; paths are judged without them", "err", err)
		case err == nil && !kept:
			s.log.Debug("the client's roots/list answer was not kept (not a list of roots, or its roots changed since)")
		}
		return roots, known
	}
}

// errNoRootsCapability: the client did not declare roots.
var errNoRootsCapability = errors.New("the client did not declare the roots capability")

// askRoots sends the client roots/list: on the connection of a client
// that did initialize, in the call ctx belongs to for a 2026-07-28
// client (an input_required round of that call).
func (s *Session) askRoots(ctx context.Context) (json.RawMessage, error) {
	if s.modern.Load() {
		res, asked, err := s.modernClient.AskInCall(ctx, &jsonrpc.Request{Method: "roots/list", Params: json.RawMessage(`{}`)})
		if !asked {
			return nil, errNoRootsCapability // no call to carry the question, or no roots declared
		}
		return res, err
	}
	if raw, ok := rawjson.Lookup(s.init.Capabilities, "roots"); !ok || string(raw) == "null" {
		return nil, errNoRootsCapability
	}
	return s.client.Call(ctx, "roots/list", json.RawMessage(`{}`))
}
