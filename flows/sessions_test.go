package flows

import (
	"fmt"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/results"
)

// TestSessions: each session's flows are its own; an ended one is
// forgotten, a cleared one starts afresh, and the least recently used
// goes first past MaxSessions.
func TestSessions(t *testing.T) {
	pol := compiled(t, "")
	clock := at
	s := &Sessions{Now: func() time.Time { return clock }}
	read := func(session string) {
		s.Of(session, true).Observe(Read{Method: results.ToolsCall, Server: "fs", Tool: "read_file",
			Effects: policy.Effects(0).With(policy.EffectRead), Raw: text("[default]\n" + awsLine + "\n"), At: at}, pol)
	}
	private := func(session string) bool { return len(s.Flow(session, nil, false).Private) > 0 }
	tests := []struct {
		name string
		do   func()
		want map[string]bool // session → it holds what it read
	}{
		{"a new session is clean, and made only when asked", func() {
			if s.Of("s1", false) != nil {
				t.Error("a session's flows were made by a look")
			}
		}, map[string]bool{"s1": false}},
		{"what a session reads is its own", func() { read("s1") }, map[string]bool{"s1": true, "s2": false}},
		{"the human clears one", func() { read("s2"); s.Forget("s1") }, map[string]bool{"s1": false, "s2": true}},
		{"an ended one is forgotten", func() { s.End("s2") }, map[string]bool{"s2": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.do()
			for session, want := range tt.want {
				if got := private(session); got != want {
					t.Errorf("%s holds what it read: %v, want %v", session, got, want)
				}
			}
		})
	}
	if f := s.Flow("s9", nil, true); !f.Remote {
		t.Error("a remote server's call is not said to be one")
	}
	read("oldest")
	for i := range MaxSessions {
		clock = clock.Add(time.Second)
		s.Of(fmt.Sprint("s", i), true)
	}
	if s.Of("oldest", false) != nil || len(s.by) != MaxSessions {
		t.Errorf("%d sessions kept; the least recently used is still there", len(s.by))
	}
}
