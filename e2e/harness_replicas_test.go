package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aqlguard/aqlguard/internal/fixture/pgtest"
)

// A replica set is N real `aqlguard serve` processes on one state, as
// docs/deploy.md describes a replicated deployment: one config file
// (per-client tokens in [[serve.clients]]), each process with a HOME of
// its own, one Streamable HTTP server downstream that every session of
// every replica reaches, and one human. On "postgres" the state is a
// throwaway PostgreSQL cluster of the test's own (internal/fixture/pgtest: it
// can be stopped and started), reached by AQLGUARD_STATE_DSN; on
// "bbolt" it is one state directory the processes share on this
// machine, which is what aqlguard did before PostgreSQL and must keep
// doing.
type replicaSet struct {
	backend string
	cfg     string // the config file every replica reads
	env     []string
	pg      *pgtest.Cluster // nil on bbolt
	human   *human
	calls   string // the downstream server's call log
	tokens  map[string]string
	reps    []*replica
}

type replica struct {
	set    *replicaSet
	i      int
	dir    string
	listen string
	url    string
	cmd    *exec.Cmd
	log    *syncBuffer
	mark   string
	exited chan struct{}
}

// replicaBackends are the state backends replica tests run on.
var replicaBackends = []string{"bbolt", "postgres"}

// replicaClients are the clients of a replica set: each has a token of
// its own and is its own principal.
var replicaClients = []string{"alice", "bob", "carol", "dave"}

// onReplicas runs test on n fresh replicas of each backend, as subtests
// named by the backend.
func onReplicas(t *testing.T, n int, test func(t *testing.T, rs *replicaSet)) {
	for _, backend := range replicaBackends {
		t.Run(backend, func(t *testing.T) { test(t, startReplicas(t, backend, n)) })
	}
}

// startReplicas starts n replicas on backend. Cleanup stops them all.
func startReplicas(t *testing.T, backend string, n int) *replicaSet {
	t.Helper()
	return startReplicasFor(t, backend, n, replicaClients)
}

// startReplicasFor is startReplicas with other clients than
// replicaClients.
func startReplicasFor(t *testing.T, backend string, n int, clients []string) *replicaSet {
	t.Helper()
	rs := &replicaSet{backend: backend, human: newHuman(t), tokens: map[string]string{}}
	rs.calls = testserverLog(t)
	down := startTestServerHTTP(t, "-log", rs.calls, "-name", "replicas")
	var state string
	switch backend {
	case "postgres":
		rs.pg = pgtest.Private(t)
		rs.env = []string{"AQLGUARD_STATE_DSN=" + rs.pg.Database(t)}
		// A call that cannot reach the state is refused within this
		// bound, not after the default's.
		state = "state_lock_timeout = \"2s\"\n[state]\nbackend = \"postgres\"\n"
	case "bbolt":
		state = "state_dir = " + tomlString(t.TempDir()) + "\n"
	default:
		t.Fatalf("no backend %q", backend)
	}
	cli := t.TempDir()
	rs.cfg = filepath.Join(cli, "config.toml")
	writeFile(t, rs.cfg, `mode = "all"
agent = "replica-default"
`+state+rs.human.config()+`
[safety]
max_autonomous_steps = 1000000
deny = ["*drop_database*"]
requires_approval = ["ts_delete_note"]
auto_approve = ["ts_echo"]

[serve]
max_sessions = 128

[[servers]]
name = "ts"
trust_first_sight = true
url = `+tomlString(down)+`
`)
	for _, c := range clients {
		rs.tokens[c] = addClient(t, cli, rs.cfg, c, "--agent", c)
	}
	for i := range n {
		r := &replica{set: rs, i: i, dir: t.TempDir(), listen: freeAddr(t)}
		r.url = "http://" + r.listen + "/mcp"
		rs.reps = append(rs.reps, r)
		t.Cleanup(func() { r.stop(t) })
	}
	for _, r := range rs.reps {
		r.start(t)
	}
	return rs
}

// start runs the replica's `aqlguard serve` and waits until it listens.
func (r *replica) start(t *testing.T) {
	t.Helper()
	r.cmd = exec.Command(bins.aqlguard, "serve", "--listen", r.listen, "--config", r.set.cfg)
	r.mark = processMark()
	r.cmd.Env = append(append(isolatedEnv(t, r.dir), r.set.env...), r.mark)
	r.log = &syncBuffer{}
	r.cmd.Stderr = r.log
	diesWithTest(r.cmd)
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.exited = make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(r.exited) }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case <-r.exited:
			t.Fatalf("replica %d exited before it listened:\n%s", r.i, r.log.String())
		default:
		}
		if res, err := http.Get("http://" + r.listen + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %d does not listen:\n%s", r.i, r.log.String())
		}
	}
}

// kill ends the replica with SIGKILL: nothing of it runs after.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.exited
	r.cmd = nil
}

// stop ends the replica as its service manager would (SIGINT), and
// checks it left no process behind.
func (r *replica) stop(t *testing.T) {
	t.Helper()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(os.Interrupt)
	select {
	case <-r.exited:
	case <-time.After(15 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.exited
		t.Errorf("replica %d did not stop within 15s of SIGINT", r.i)
	}
	r.cmd = nil
	checkMarked(t, r.mark)
	if t.Failed() {
		t.Logf("replica %d log:\n%s", r.i, r.log.String())
	}
}

// connect opens a session of client at the replica. Cleanup closes it.
func (r *replica) connect(t *testing.T, client string) *mcp.ClientSession {
	t.Helper()
	cs, err := connectHTTP(t, r.url, bearerClient(r.set.tokens[client]))
	if err != nil {
		t.Fatalf("%s at replica %d: %v", client, r.i, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// aqlCall calls operation through the single endpoint and returns the
// MCP-AQL result, or the transport's error (a replica killed under it).
func aqlCall(ctx context.Context, cs *mcp.ClientSession, operation string, params map[string]any) (map[string]any, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_aql", Arguments: map[string]any{"operation": operation, "params": params}})
	if err != nil {
		return nil, err
	}
	if len(res.Content) != 1 {
		return nil, fmt.Errorf("%d content blocks", len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return nil, errors.New("not a text result")
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(text.Text), &out); err != nil {
		return nil, fmt.Errorf("not an MCP-AQL result: %s", text.Text)
	}
	return out, nil
}

// mustAQL is aqlCall failing the test on a transport error.
func mustAQL(t *testing.T, cs *mcp.ClientSession, operation string, params map[string]any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := aqlCall(ctx, cs, operation, params)
	if err != nil {
		t.Fatalf("%s: %v", operation, err)
	}
	return res
}

// aqlCode is an MCP-AQL failure's error code ("" for a success).
func aqlCode(res map[string]any) string {
	e, _ := res["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// admin runs an admin verb on the replica set's state.
func (rs *replicaSet) admin(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return aqlguardCLIEnv(t, t.TempDir(), rs.env, append(args, "--config", rs.cfg)...)
}

// records is the state's audit chain, after `aqlguard audit verify` said
// it is one whole chain.
func (rs *replicaSet) records(t *testing.T) []map[string]any {
	t.Helper()
	if out, errOut, code := rs.admin(t, "audit", "verify"); code != 0 || !strings.Contains(out, "audit chain verified") {
		t.Fatalf("audit verify: exit %d: %s%s", code, out, errOut)
	}
	out, errOut, code := rs.admin(t, "audit", "export")
	if code != 0 {
		t.Fatalf("audit export: exit %d: %s", code, errOut)
	}
	var recs []map[string]any
	for line := range strings.Lines(out) {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("audit export line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// docsBlock is the fenced code block of the repository file path (from
// its root) that contains marker, as written.
func docsBlock(t *testing.T, path, marker string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(b), "```")
	for i := 1; i < len(parts); i += 2 { // the odd parts are inside fences
		if strings.Contains(parts[i], marker) {
			_, body, _ := strings.Cut(parts[i], "\n") // after the info string
			return body
		}
	}
	t.Fatalf("%s has no code block with %q", path, marker)
	return ""
}
