package secrets

import (
	"strings"
	"testing"
)

const issueJSON = `{"url":"https://api.github.com/repos/golang/go/issues/61234","repository_url":"https://api.github.com/repos/golang/go","labels_url":"https://api.github.com/repos/golang/go/issues/61234/labels{/name}","id":1801234567,"node_id":"I_kwDOAWBuPM5rXkLH","number":61234,"title":"cmd/go: go mod tidy removes needed token dependency","user":{"login":"someone","id":1234567,"avatar_url":"https://avatars.githubusercontent.com/u/1234567?v=4","type":"User"},"state":"open","body":"When I run go mod tidy with GOFLAGS=-mod=mod the auth key of the private proxy is dropped. Commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a broke it. The access token is read from GOAUTH. Steps: 1. set GOPRIVATE 2. run tidy. Expected: keep the secret out of logs. Actual: password prompt appears. uuid 550e8400-e29b-41d4-a716-446655440000 sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 jira test_foo sk-learn"}`

func TestQuick(t *testing.T) {
	fs := Default().Scan("x", issueJSON)
	t.Logf("%+v", fs)
	tok := "ghp_zQWBuTSOoRi4A9spHcVY5ncnsDkxkJ" + "0mLq17"
	fs = Default().Scan("x", "token: "+tok+"\n")
	t.Logf("%+v", fs)
	fs = Default().Scan("x", "token: "+strings.Replace(tok, "zQ", "zq", 1)+"\n")
	t.Logf("%+v", fs)
}

func BenchmarkQuick(b *testing.B) {
	s := Default()
	b.SetBytes(int64(len(issueJSON)))
	for b.Loop() {
		s.Scan("x", issueJSON)
	}
}
