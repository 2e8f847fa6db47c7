package proxy

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/guard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDownstreamFailuresAreFixedSentences (issue 20, fault 10): a server
// that is not there is named once, in a fixed sentence saying what to
// do, never as a doubled Go error chain.
func TestDownstreamFailuresAreFixedSentences(t *testing.T) {
	op := &catalog.Operation{Name: "ts_echo", Server: "ts", Tool: &mcp.Tool{Name: "echo"}}
	next := time.Now().Add(2 * time.Second)
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("server ts: tools/call echo: %w", &downstream.UnavailableError{Server: "ts", Status: downstream.Restarting, Attempt: 3, Next: next, Problem: "server exited with code 1"}),
			`^Internal error: 'server ts is restarting \(attempt 3, next in 2(\.0)?s; last: server exited with code 1\): try again then'$`},
		{&downstream.UnavailableError{Server: "ts", Status: downstream.Restarting, During: "tools/call"},
			`^Internal error: 'server ts went away during tools/call; aqlguard restarts it: try again in a moment'$`},
		{&downstream.UnavailableError{Server: "ts", Status: downstream.Failed, Problem: "command not found"},
			`^Internal error: 'server ts is not available \(command not found\); check its configuration and aqlguard's log'$`},
		{&downstream.CallTimeoutError{Server: "ts", Method: "tools/call", Limit: 5 * time.Second},
			`^Internal error: 'server ts did not answer tools/call within its call_timeout \(5s\); the request was cancelled'$`},
		{guard.ErrNoDownstream, `^Internal error: 'server ts is not available; check aqlguard's log'$`},
	}
	for _, tc := range cases {
		e := downstreamFailure(op, tc.err)
		if !regexp.MustCompile(tc.want).MatchString(e.Message) {
			t.Errorf("%v\n told %q\n want %s", tc.err, e.Message, tc.want)
		}
		if strings.Count(e.Message, "unavailable") > 0 || strings.Count(e.Message, "server ts") != 1 {
			t.Errorf("%q repeats the server or a Go error", e.Message)
		}
	}
}
