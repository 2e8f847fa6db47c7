package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Concurrency attacks on what a 2026-07-28 client shares with others over
// `aqlguard serve`: the POSTs of clients that say the same clientInfo and
// capabilities share a relay session, so what belongs to one request must
// reach that request's POST and no other.

// modernPost sends one 2026-07-28 request (no session) and returns its
// status and the whole answer (JSON, or the event stream).
func modernPost(ctx context.Context, url, method, name, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", modernVersion)
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), err
}

// twinMeta is the _meta of a client every twin sends alike.
const twinMeta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"twin","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}`

// TestModernProgressReachesItsOwnPost: two clients alike (one relay
// session) call at once with the same request id and the same progress
// token, as two instances of one SDK do; each POST gets the progress of
// its own call only.
func TestModernProgressReachesItsOwnPost(t *testing.T) {
	url := startServe(t, "mode = \"transparent\"\n"+allowingServe(t)+"[[servers]]\nname = \"notes\"\ntrust_first_sight = true\ncommand = "+tomlString(bins.testserver)+"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*callTimeout)
	defer cancel()
	// The session's servers start on its first request.
	if status, body, err := modernPost(ctx, url, "tools/list", "", `{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{"_meta":{`+twinMeta+`}}}`); err != nil || status != 200 {
		t.Fatalf("tools/list: %d %v %s", status, err, body)
	}
	labels := []string{"alpha", "bravo", "charlie", "delta"}
	answers := make([]string, len(labels))
	var wg sync.WaitGroup
	for i, label := range labels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":1500,"label":"` + label +
				`"},"_meta":{"progressToken":1,` + twinMeta + `}}}`
			status, answer, err := modernPost(ctx, url, "tools/call", "slow", body)
			if err != nil || status != 200 {
				answer = fmt.Sprintf("status %d, %v: %s", status, err, answer)
			}
			answers[i] = answer
		}()
	}
	wg.Wait()
	for i, label := range labels {
		got := progressMessages(answers[i])
		if len(got) != 2 || got[0] != label || got[1] != label {
			t.Errorf("the POST of %s got the progress of %q, want its own two:\n%s", label, got, answers[i])
		}
	}
}

// progressMessages are the messages of the progress notifications in an
// event stream, in order.
func progressMessages(stream string) []string {
	var out []string
	for _, line := range strings.Split(stream, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var m struct {
			Method string `json:"method"`
			Params struct {
				Message string `json:"message"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(data), &m) == nil && m.Method == "notifications/progress" {
			out = append(out, m.Params.Message)
		}
	}
	return out
}

var _ = time.Second
