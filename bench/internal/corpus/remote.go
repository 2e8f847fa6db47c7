package corpus

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The attacks on transport and configuration: a remote server over plain
// HTTP on the network (man in the middle), aqlguard serve reached through
// DNS rebinding or left open on every interface (configuration drift), and
// a remote server whose OAuth metadata carries a command (vulnerable
// client, CVE-2025-6514).

// startPlainHTTP runs internal/fixture/testserver over Streamable HTTP on an
// address of this machine that is not a loopback one: a remote server on
// the local network, reached over plain http://.
func (w *world) startPlainHTTP(name string) (*exec.Cmd, string, error) {
	addr := localAddress()
	if addr == "" {
		return nil, "", errors.New("no non-loopback address on this machine for a plain-HTTP remote server")
	}
	w.logs[name] = filepath.Join(w.dir, name+".calls.jsonl")
	return w.startHTTPServer(w.env.Testserver, "-http", addr+":0", "-log", w.logs[name])
}

// startHTTPServer runs a server that prints "listening on URL" to stderr,
// and returns the URL.
func (w *world) startHTTPServer(argv ...string) (*exec.Cmd, string, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = w.environ()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				select {
				case urls <- u:
				default:
				}
			}
		}
	}()
	select {
	case u := <-urls:
		return cmd, u, nil
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, "", fmt.Errorf("%s did not say where it listens", filepath.Base(argv[0]))
	}
}

// runServeAttack runs `aqlguard serve` and makes the attack's HTTP
// requests to it.
func runServeAttack(ctx context.Context, w *world, v Variant, r Result) Result {
	a := v.Attack
	config, err := w.writeConfig("all", a.Servers, v.ReadOnly, a.Config)
	if err != nil {
		return r.broken(err)
	}
	port, err := freePort()
	if err != nil {
		return r.broken(err)
	}
	listen := "127.0.0.1:{{port}}"
	if a.Listen != "" {
		listen = a.Listen
	}
	listen = strings.ReplaceAll(listen, "{{port}}", port)
	cmd := exec.Command(w.env.Aqlguard, "serve", "--listen", listen, "--config", config, "--state-dir", w.state)
	cmd.Dir, cmd.Env = w.dir, w.environ()
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 3 * time.Second
	if err := cmd.Start(); err != nil {
		return r.broken(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}()
	// Ready when it accepts connections; refused when it exits first.
	ready := false
	for deadline := time.Now().Add(15 * time.Second); !ready && time.Now().Before(deadline); {
		select {
		case <-exited:
			r.Verdict, r.Why = Stopped, "serve refuses to start: "+lastLines(refusal(stderr.String()), 2)
			return r
		case <-time.After(50 * time.Millisecond):
		}
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second); err == nil {
			_ = c.Close()
			ready = true
		}
	}
	if !ready {
		return r.broken(fmt.Errorf("serve did not listen: %s", lastLines(stderr.String(), 3)))
	}
	token, _ := os.ReadFile(filepath.Join(w.state, "serve.token"))
	base := "http://127.0.0.1:" + port + "/mcp"
	asked := len(w.human.questions())
	for _, st := range a.Steps {
		if st.HTTP == nil {
			continue
		}
		server := a.Servers[0].Name
		before := len(receivedBy(w.logs[server]))
		hs := *st.HTTP
		if hs.Arguments, err = w.expandJSON(hs.Arguments); err != nil {
			return r.broken(err)
		}
		status, body := w.httpSession(ctx, base, port, strings.TrimSpace(string(token)), &hs)
		sr := StepResult{Step: describe(st), Harmful: st.Harmful, Visible: true, Answer: fmt.Sprintf("HTTP %d %s", status, shorten(body, 200))}
		for _, rec := range receivedBy(w.logs[server])[before:] {
			if rec.Method == "tools/call" && rec.Name == st.HTTP.Tool {
				sr.Reached = true
			}
		}
		sr.Asked = w.newQuestions(&asked)
		switch {
		case sr.Reached:
			sr.Verdict = Passed
		case askedHuman(sr.Asked):
			sr.Verdict = Flagged
		default:
			sr.Verdict = Stopped
		}
		r.Steps = append(r.Steps, sr)
	}
	return r.judge()
}

// httpSession opens an MCP session on serve with the step's headers and
// makes its tools/call: the HTTP status of the first refused request, or
// of the call, and its body.
func (w *world) httpSession(ctx context.Context, base, port, token string, hs *HTTPStep) (int, string) {
	client := &http.Client{Timeout: callTimeout}
	sid := ""
	post := func(msg map[string]any) (int, string, http.Header) {
		msg["jsonrpc"] = "2.0"
		b, _ := json.Marshal(msg)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base, bytes.NewReader(b))
		if err != nil {
			return 0, err.Error(), nil
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if !hs.NoToken && token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if hs.Host != "" {
			req.Host = strings.ReplaceAll(hs.Host, "{{port}}", port)
		}
		if hs.Origin != "" {
			req.Header.Set("Origin", strings.ReplaceAll(hs.Origin, "{{port}}", port))
		}
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error(), nil
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(body), resp.Header
	}
	status, body, h := post(map[string]any{"id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "rebinding-page", "version": "1"}}})
	if status != http.StatusOK {
		return status, body
	}
	sid = h.Get("Mcp-Session-Id")
	if status, body, _ := post(map[string]any{"method": "notifications/initialized"}); status >= 300 {
		return status, body
	}
	var args any = map[string]any{}
	if len(hs.Arguments) > 0 {
		_ = json.Unmarshal(hs.Arguments, &args)
	}
	status, body, _ = post(map[string]any{"id": 2, "method": "tools/call", "params": map[string]any{"name": hs.Tool, "arguments": args}})
	return status, body
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// browserScript records how aqlguard opens the browser: each argument on
// a line of its own, never evaluated.
const browserScript = `#!/bin/sh
for a in "$@"; do printf '%s\n' "$a"; done >> "$(dirname "$0")/browser.log"
`

// runOAuthAttack connects aqlguard to a remote server that wants OAuth and
// names an authorization endpoint holding a shell command. Passed if the
// command ran (the marker file exists), else stopped.
func runOAuthAttack(ctx context.Context, w *world, v Variant, r Result) Result {
	a := v.Attack
	name := a.Servers[0].Name
	w.logs[name] = filepath.Join(w.dir, name+".calls.jsonl")
	rogue, url, err := w.startHTTPServer(w.env.Rogue, "-http", "127.0.0.1:0", "-oauth-authorize", w.expand(a.Authorize), "-log", w.logs[name])
	if err != nil {
		return r.broken(err)
	}
	defer func() { _ = rogue.Process.Kill(); _ = rogue.Wait() }()
	browser := filepath.Join(w.dir, "browser.sh")
	if err := os.WriteFile(browser, []byte(browserScript), 0o700); err != nil {
		return r.broken(err)
	}
	spec := ServerSpec{Name: name, TOML: fmt.Sprintf("url = %s\nauth = \"oauth\"\n", tomlString(url))}
	config, err := w.writeConfig("all", []ServerSpec{spec}, false, "")
	if err != nil {
		return r.broken(err)
	}
	// aqlguard starts the server on the client's initialize; the server
	// answers 401, and aqlguard authorizes (and opens the browser) while
	// that initialize waits. The verdict is on what ran, not on the
	// session: a bare initialize on aqlguard's stdin is all it takes.
	cmd := exec.Command(w.env.Aqlguard, "run", "--config", config, "--state-dir", w.state)
	cmd.Dir, cmd.Env = w.dir, w.environ("BROWSER="+browser)
	var stderr lockedBuffer
	cmd.Stderr, cmd.Stdout = &stderr, io.Discard
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return r.broken(err)
	}
	if err := cmd.Start(); err != nil {
		return r.broken(err)
	}
	_, _ = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"corpus-agent","version":"1"}}}`+"\n")
	opened := filepath.Join(w.dir, "browser.log")
	for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if exists(opened) || exists(w.marker) || strings.Contains(stderr.String(), "authorization failed") {
			time.Sleep(300 * time.Millisecond) // what the browser was handed runs now, if it runs
			break
		}
	}
	_ = stdin.Close()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	handed, _ := os.ReadFile(opened)
	switch {
	case exists(w.marker):
		r.Verdict, r.Why = Passed, "the command in the authorization endpoint ran"
	case len(handed) > 0:
		r.Verdict, r.Why = Stopped, "the browser was handed the URL as one argument, no shell: "+shorten(string(handed), 160)
	default:
		why := lastLines(refusal(stderr.String()), 1)
		for line := range strings.Lines(stderr.String()) {
			if _, err, ok := strings.Cut(line, "authorization failed\""); ok {
				why = "the authorization failed:" + err
				break
			}
		}
		r.Verdict, r.Why = Stopped, "no browser was opened: "+shorten(why, 300)
	}
	return r
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
