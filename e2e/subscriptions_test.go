package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Resource subscriptions under attack: servers that announce updates
// nobody subscribed to, or updates of another server's resources, and
// clients that subscribe, cancel and subscribe again at once.

// rawGuard is `aqlguard run` on two resservers (alpha, beta) spoken to
// as a raw JSON-RPC peer that keeps every notification.
type rawGuard struct {
	peer *link.Peer
	mu   sync.Mutex
	seen []*jsonrpc.Request
}

func startRawGuard(t *testing.T, alphaArgs ...string) *rawGuard {
	t.Helper()
	dir := t.TempDir()
	args := func(name string, extra []string) string {
		q := []string{tomlString("-name"), tomlString(name)}
		for _, a := range extra {
			q = append(q, tomlString(a))
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	config := "state_dir = " + tomlString(filepath.Join(dir, "state")) + "\nmode = \"transparent\"\n" +
		strings.TrimPrefix(allowingServe(t), "[serve]\nauth = \"none\"\n") +
		"[[servers]]\nname = \"alpha\"\ntrust_first_sight = true\ncommand = " + tomlString(bins.resserver) + "\nargs = " + args("alpha", alphaArgs) + "\n" +
		"[[servers]]\nname = \"beta\"\ntrust_first_sight = true\ncommand = " + tomlString(bins.resserver) + "\nargs = " + args("beta", nil) + "\n"
	g := &rawGuard{}
	g.peer = startRawRun(t, dir, config, func(req *jsonrpc.Request) {
		g.mu.Lock()
		g.seen = append(g.seen, req)
		g.mu.Unlock()
	})
	return g
}

// startRawRun is `aqlguard run` on config, in dir, spoken to as a raw
// JSON-RPC peer whose notifications go to note.
func startRawRun(t *testing.T, dir, config string, note func(*jsonrpc.Request)) *link.Peer {
	t.Helper()
	path := filepath.Join(dir, "config.toml")
	writeFile(t, path, config)
	cmd := exec.Command(bins.aqlguard, "run", "--config", path)
	mark := processMark()
	cmd.Env = append(isolatedEnv(t, dir), mark)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	log := &syncBuffer{}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	peer := link.New(link.NewLineConn(stdout, stdin, stdin.Close), notes(note), nil)
	peer.Start()
	t.Cleanup(func() {
		_ = peer.Close()
		_ = cmd.Wait()
		checkMarked(t, mark)
		if t.Failed() {
			t.Logf("aqlguard log:\n%s", log.String())
		}
	})
	return peer
}

// initialize begins a 2025-11-25 session.
func (g *rawGuard) initialize(t *testing.T, ctx context.Context) {
	t.Helper()
	g.call(t, ctx, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	_ = g.peer.Notify(ctx, "notifications/initialized", json.RawMessage(`{}`))
}

func (g *rawGuard) call(t *testing.T, ctx context.Context, method, params string) json.RawMessage {
	t.Helper()
	res, err := g.peer.Call(ctx, method, json.RawMessage(params))
	if err != nil {
		t.Fatalf("%s %s: %v", method, params, err)
	}
	return res
}

// listResources lists every page of resources/list, so that aqlguard
// knows which server each uri is at; meta is "" or the members of a
// 2026-07-28 request's _meta, as modernCaps.
func (g *rawGuard) listResources(t *testing.T, ctx context.Context, meta string) {
	t.Helper()
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		var members []string
		if meta != "" {
			members = append(members, meta)
		}
		if cursor != "" {
			members = append(members, `"cursor":`+strconv.Quote(cursor))
		}
		var page struct {
			NextCursor string `json:"nextCursor"`
		}
		_ = json.Unmarshal(g.call(t, ctx, "resources/list", "{"+strings.Join(members, ",")+"}"), &page)
		if cursor = page.NextCursor; cursor == "" {
			return
		}
	}
	t.Fatal("resources/list pages on and on")
}

// notifications are the notifications seen of a method, their params
// as sent.
func (g *rawGuard) notifications(method string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, n := range g.seen {
		if n.Method == method {
			out = append(out, string(n.Params))
		}
	}
	return out
}

// updates are the uris of the resources/updated notifications seen, each
// with the subscription id it was tagged with, if any.
func (g *rawGuard) updates() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, n := range g.seen {
		if n.Method != "notifications/resources/updated" {
			continue
		}
		var p struct {
			URI  string `json:"uri"`
			Meta struct {
				Sub json.RawMessage `json:"io.modelcontextprotocol/subscriptionId"`
			} `json:"_meta"`
		}
		_ = json.Unmarshal(n.Params, &p)
		if p.Meta.Sub != nil {
			out = append(out, p.URI+" @"+string(p.Meta.Sub))
		} else {
			out = append(out, p.URI)
		}
	}
	return out
}

// TestResourceUpdatesComeFromTheirServer (2025-11-25 client): an update
// reaches the client only for a resource it subscribed to, and only from
// the server that resource is at.
func TestResourceUpdatesComeFromTheirServer(t *testing.T) {
	g := startRawGuard(t)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	g.initialize(t, ctx)
	g.listResources(t, ctx, ``)
	g.call(t, ctx, "resources/subscribe", `{"uri":"beta://doc/1"}`)
	for _, a := range []struct{ server, uri string }{
		{"alpha", "beta://doc/1"},  // another server's resource
		{"alpha", "alpha://doc/2"}, // nobody subscribed
		{"beta", "beta://doc/2"},   // nobody subscribed
		{"beta", "beta://doc/1"},   // the one
	} {
		g.call(t, ctx, "tools/call", `{"name":"`+a.server+`__announce","arguments":{"uri":"`+a.uri+`"}}`)
	}
	// beta's resource in a spelling some clients read and aqlguard does not.
	for _, params := range []string{`{"uri":"alpha://doc/2","uri":"beta://doc/1"}`, `{"URI":"beta://doc/1"}`} {
		g.call(t, ctx, "tools/call", `{"name":"alpha__notify","arguments":{"method":"notifications/resources/updated","params":`+strconv.Quote(params)+`}}`)
	}
	time.Sleep(500 * time.Millisecond)
	if got := g.updates(); len(got) != 1 || got[0] != "beta://doc/1" {
		t.Errorf("updates reached the client for %q, want beta://doc/1 once, from beta", got)
	}
	g.call(t, ctx, "resources/unsubscribe", `{"uri":"beta://doc/1"}`)
	g.call(t, ctx, "tools/call", `{"name":"beta__announce","arguments":{"uri":"beta://doc/1"}}`)
	time.Sleep(300 * time.Millisecond)
	if got := g.updates(); len(got) != 1 {
		t.Errorf("an update after unsubscribe reached the client: %q", got)
	}
}

const modernCaps = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"subs","version":"1"}}`

// listen opens a subscriptions/listen stream for uris under id and waits
// for its acknowledgement; cancel ends it.
func (g *rawGuard) listen(t *testing.T, id string, uris ...string) (cancel func()) {
	t.Helper()
	cancel, err := g.tryListen(id, uris...)
	if err != nil {
		t.Fatal(err)
	}
	return cancel
}

// tryListen is listen for any goroutine: it says what failed.
func (g *rawGuard) tryListen(id string, uris ...string) (cancel func(), err error) {
	q, _ := json.Marshal(uris)
	rid, _ := jsonrpc.MakeID(id)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = g.peer.CallAs(ctx, rid, "subscriptions/listen", json.RawMessage(`{"notifications":{"resourceSubscriptions":`+string(q)+`},`+modernCaps+`}`))
	}()
	cancel = func() { stop(); <-done }
	acked := func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, n := range g.seen {
			if n.Method == "notifications/subscriptions/acknowledged" && strings.Contains(string(n.Params), `"`+id+`"`) {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(20 * time.Second); !acked(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cancel()
			return nil, fmt.Errorf("stream %s: no acknowledgement within 20s", id)
		}
	}
	return cancel, nil
}

// eventually polls ok for up to 10s.
func eventually(ok func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if ok() {
			return true
		}
	}
	return false
}

func (g *rawGuard) subscribedAt(t *testing.T, ctx context.Context, server string) string {
	t.Helper()
	res := g.call(t, ctx, "tools/call", `{"name":"`+server+`__subscribed","arguments":{},`+modernCaps+`}`)
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(res, &r)
	if len(r.Content) == 0 {
		t.Fatalf("subscribed: %s", res)
	}
	return r.Content[0].Text
}

// TestListenStreamsUnderAttack (2026-07-28 client): a stream that names a
// resource twice leaves no subscription behind when it ends; a stream
// that subscribes while another's unsubscribe is on its way keeps its
// subscription; a stream gets the updates of its resources from their
// server only.
func TestListenStreamsUnderAttack(t *testing.T) {
	g := startRawGuard(t, "-unsubscribe-delay", "1s")
	ctx, cancel := context.WithTimeout(context.Background(), 2*callTimeout)
	defer cancel()
	g.listResources(t, ctx, modernCaps)

	end := g.listen(t, "twice", "alpha://doc/1", "alpha://doc/1")
	end()
	if !eventually(func() bool { return g.subscribedAt(t, ctx, "alpha") == "" }) {
		t.Errorf("alpha is still subscribed to %q after the stream that named it twice ended", g.subscribedAt(t, ctx, "alpha"))
	}

	end = g.listen(t, "first", "alpha://doc/2")
	end() // its unsubscribe takes a second at alpha
	time.Sleep(100 * time.Millisecond)
	end2 := g.listen(t, "second", "alpha://doc/2")
	defer end2()
	time.Sleep(1500 * time.Millisecond) // the first stream's unsubscribe is done
	if got := g.subscribedAt(t, ctx, "alpha"); got != "alpha://doc/2" {
		t.Errorf("with a stream listening, alpha has %q subscribed, want alpha://doc/2", got)
	}
	g.call(t, ctx, "tools/call", `{"name":"beta__announce","arguments":{"uri":"alpha://doc/2"},`+modernCaps+`}`)
	g.call(t, ctx, "tools/call", `{"name":"alpha__announce","arguments":{"uri":"alpha://doc/1"},`+modernCaps+`}`)
	g.call(t, ctx, "tools/call", `{"name":"alpha__announce","arguments":{"uri":"alpha://doc/2"},`+modernCaps+`}`)
	waitFor(t, "alpha's update on the second stream", func() bool { return len(g.updates()) > 0 })
	time.Sleep(300 * time.Millisecond)
	if got := g.updates(); len(got) != 1 || got[0] != `alpha://doc/2 @"second"` {
		t.Errorf("updates %q, want alpha://doc/2 once, on the second stream, from alpha", got)
	}

	// A server cannot put what it says on the client's stream by naming
	// the stream's id: the ids are aqlguard's to give.
	forged := `{"_meta":{"io.modelcontextprotocol/subscriptionId":"second"},"note":"forged"}`
	g.call(t, ctx, "tools/call", `{"name":"beta__notify","arguments":{"method":"notifications/beta/news","params":`+strconv.Quote(forged)+`},`+modernCaps+`}`)
	waitFor(t, "beta's notification", func() bool { return len(g.notifications("notifications/beta/news")) > 0 })
	for _, n := range g.notifications("notifications/beta/news") {
		if strings.Contains(n, "subscriptionId") {
			t.Errorf("a server's notification reached the client tagged as its listen stream's: %s", n)
		}
	}
}

// TestListenStreamsConcurrently (2026-07-28 client): streams on the same
// resource open and end at once, each subscribe and unsubscribe slow at
// the server; whatever the order, the server is subscribed exactly while
// a stream is open, and each update reaches each open stream once.
func TestListenStreamsConcurrently(t *testing.T) {
	g := startRawGuard(t, "-subscribe-delay", "30ms", "-unsubscribe-delay", "30ms")
	ctx, cancel := context.WithTimeout(context.Background(), 2*callTimeout)
	defer cancel()
	g.listResources(t, ctx, modernCaps)
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 4 {
				end, err := g.tryListen(fmt.Sprintf("w%d-%d", w, i), "alpha://doc/1", "beta://doc/1")
				if err != nil {
					t.Error(err)
					return
				}
				end()
			}
		}()
	}
	wg.Wait()
	// A stream's end is its cancellation: the unsubscribes follow.
	for _, server := range []string{"alpha", "beta"} {
		waitFor(t, server+" to have nothing subscribed once every stream ended", func() bool {
			return g.subscribedAt(t, ctx, server) == ""
		})
	}
	a := g.listen(t, "a", "alpha://doc/1")
	defer a()
	b := g.listen(t, "b", "alpha://doc/1", "beta://doc/1")
	defer b()
	if got := g.subscribedAt(t, ctx, "alpha"); got != "alpha://doc/1" {
		t.Errorf("alpha has %q subscribed, want alpha://doc/1", got)
	}
	g.call(t, ctx, "tools/call", `{"name":"alpha__announce","arguments":{"uri":"alpha://doc/1"},`+modernCaps+`}`)
	waitFor(t, "alpha's update on both streams", func() bool { return len(g.updates()) >= 2 })
	time.Sleep(300 * time.Millisecond)
	got := g.updates()
	slices.Sort(got)
	if want := []string{`alpha://doc/1 @"a"`, `alpha://doc/1 @"b"`}; !slices.Equal(got, want) {
		t.Errorf("updates %q, want %q", got, want)
	}
}

// TestListenStreamsOfClientsAlike (2026-07-28 over `aqlguard serve`): two
// clients that say the same clientInfo and capabilities share a relay
// session, and both open their listen stream under the same request id.
// Each stream gets the updates of its own resource, under its own id;
// what a rogue server tags with the ids aqlguard gives its streams
// reaches neither.
func TestListenStreamsOfClientsAlike(t *testing.T) {
	config := "mode = \"transparent\"\n" + allowingServe(t)
	for _, name := range []string{"alpha", "beta"} {
		config += "[[servers]]\nname = " + tomlString(name) + "\ntrust_first_sight = true\ncommand = " + tomlString(bins.resserver) + "\nargs = [\"-name\", " + tomlString(name) + "]\n"
	}
	url := startServe(t, config)
	ctx, cancel := context.WithTimeout(context.Background(), 2*callTimeout)
	defer cancel()
	post := func(method, name, params string) string {
		t.Helper()
		status, body, err := modernPost(ctx, url, method, name, `{"jsonrpc":"2.0","id":7,"method":"`+method+`","params":{`+params+`"_meta":{`+twinMeta+`}}}`)
		if err != nil || status != 200 {
			t.Fatalf("%s %s: %d %v %s", method, params, status, err, body)
		}
		// The answer, whether it came as JSON or as the last event.
		lines := strings.Split(strings.TrimSpace(body), "\n")
		answer, _ := strings.CutPrefix(lines[len(lines)-1], "data: ")
		return answer
	}
	// Both pages, so that aqlguard knows where each resource is.
	var page struct {
		Result struct {
			NextCursor string `json:"nextCursor"`
		} `json:"result"`
	}
	first := post("resources/list", "", "")
	_ = json.Unmarshal([]byte(first), &page)
	if page.Result.NextCursor == "" {
		t.Fatalf("resources/list has one page for two servers: %s", first)
	}
	post("resources/list", "", `"cursor":`+strconv.Quote(page.Result.NextCursor)+`,`)

	streams := make([]string, 2)
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i, uri := range []string{"alpha://doc/1", "alpha://doc/2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["` + uri + `"]},"_meta":{` + twinMeta + `}}}`
			_, streams[i], _ = modernPost(sctx, url, "subscriptions/listen", "", body)
		}()
	}
	defer func() { stop(); wg.Wait() }()
	subscribed := func() string {
		var r struct {
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		_ = json.Unmarshal([]byte(post("tools/call", "alpha__subscribed", `"name":"alpha__subscribed","arguments":{},`)), &r)
		if len(r.Result.Content) == 0 {
			return ""
		}
		return r.Result.Content[0].Text
	}
	waitFor(t, "both streams subscribed at alpha", func() bool { return subscribed() == "alpha://doc/1\nalpha://doc/2" })
	for n := 1; n <= 12; n++ {
		forged := fmt.Sprintf(`{"uri":"alpha://doc/1","_meta":{"io.modelcontextprotocol/subscriptionId":"h-%d"},"forged":true}`, n)
		for _, method := range []string{"notifications/resources/updated", "notifications/beta/news"} {
			post("tools/call", "beta__notify", `"name":"beta__notify","arguments":{"method":"`+method+`","params":`+strconv.Quote(forged)+`},`)
		}
	}
	for _, uri := range []string{"alpha://doc/1", "alpha://doc/2"} {
		post("tools/call", "alpha__announce", `"name":"alpha__announce","arguments":{"uri":"`+uri+`"},`)
	}
	time.Sleep(500 * time.Millisecond)
	stop()
	wg.Wait()
	for i, uri := range []string{"alpha://doc/1", "alpha://doc/2"} {
		var got []string
		for _, line := range strings.Split(streams[i], "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || !strings.Contains(data, `"method":"notifications/`) || strings.Contains(data, "acknowledged") {
				continue
			}
			got = append(got, data)
		}
		want := `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"` + uri + `","_meta":{"io.modelcontextprotocol/subscriptionId":1}}}`
		if len(got) != 1 || got[0] != want {
			t.Errorf("the stream of %s got %q, want its own update once:\n%s", uri, got, streams[i])
		}
	}
}

// TestTaskIDsInWhatAServerSays (2025-11-25 client): whatever a server
// sends about one of its tasks names it as <server>:<id>, a log message
// as much as a status; a status that spells its task id in another case
// (which a client matching names without regard to case reads as
// beta's task) does not reach the client.
func TestTaskIDsInWhatAServerSays(t *testing.T) {
	g := startRawGuard(t)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	g.initialize(t, ctx)
	notify := func(method, params string) {
		g.call(t, ctx, "tools/call", `{"name":"alpha__notify","arguments":{"method":"`+method+`","params":`+strconv.Quote(params)+`}}`)
	}
	notify("notifications/tasks/status", `{"TaskId":"beta:1","status":"cancelled"}`)
	notify("notifications/message", `{"level":"info","data":"step 2","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"7"}}}`)
	waitFor(t, "alpha's log message", func() bool { return len(g.notifications("notifications/message")) > 0 })
	time.Sleep(200 * time.Millisecond)
	if got := g.notifications("notifications/message"); len(got) != 1 || !strings.Contains(got[0], `{"taskId":"alpha:7"}`) {
		t.Errorf("alpha's log message of its task 7 reached the client as %q, want it to name alpha:7", got)
	}
	if got := g.notifications("notifications/tasks/status"); len(got) != 0 {
		t.Errorf("a status naming its task as TaskId reached the client: %q", got)
	}
}
