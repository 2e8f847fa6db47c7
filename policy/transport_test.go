package policy

import (
	"strings"
	"testing"
)

// TestPlainHTTP is issue 29's item 9: a remote server over plain http to
// another host is a configuration error unless its entry says insecure =
// true, and never with credentials; the other URLs that are sent
// credentials follow the second rule. On f3570ff every one of these
// configurations loaded.
func TestPlainHTTP(t *testing.T) {
	server := func(url string, extra ...string) string {
		return "[[servers]]\nname = \"r\"\nurl = \"" + url + "\"\n" + strings.Join(extra, "\n") + "\n"
	}
	const insecure = "insecure = true"
	headers := func(name, value string) string { return "headers = { " + name + " = \"" + value + "\" }" }
	forward := func(url string, extra ...string) string {
		return "[audit.forward]\nto = \"otlp\"\nurl = \"" + url + "\"\n" + strings.Join(extra, "\n") + "\n"
	}
	tests := []struct {
		name string
		doc  string
		want []want // nil: the file loads
	}{
		// A remote server.
		{"plain http to another host", server("http://mcp.example.com/mcp"),
			[]want{{3, "servers[0].url", `"http://mcp.example.com/mcp" is plain http to mcp.example.com, which is not this machine: ` +
				`anyone on the network path can read and change every call and answer; use https://, or set insecure = true in this [[servers]] entry`}}},
		{"to an address of the network", server("http://10.0.0.7:8080/mcp"), []want{{3, "servers[0].url", "set insecure = true"}}},
		{"with insecure = true", server("http://mcp.example.com/mcp", insecure), nil},
		{"https", server("https://mcp.example.com/mcp", headers("Authorization", "Bearer ${TOKEN}"), "auth = \"none\""), nil},
		{"https with oauth", server("https://mcp.example.com/mcp", "auth = \"oauth\""), nil},
		{"HTTP in capitals is http", server("HTTP://mcp.example.com/mcp"), []want{{3, "servers[0].url", "plain http"}}},
		{"the legacy SSE transport too", server("http://mcp.example.com/sse", "transport = \"sse\""), []want{{3, "servers[0].url", "plain http"}}},

		// This machine.
		{"127.0.0.1", server("http://127.0.0.1:8080/mcp", headers("Authorization", "Bearer x"), "auth = \"oauth\""), nil},
		{"all of 127.0.0.0/8", server("http://127.8.9.10/mcp", headers("X-API-Key", "k")), nil},
		{"::1", server("http://[::1]:8080/mcp", headers("Cookie", "c")), nil},
		{"IPv4-mapped loopback", server("http://[::ffff:127.0.0.1]:8080/mcp"), nil},
		{"localhost, any case", server("http://LocalHost:8080/mcp", "auth = \"oauth\""), nil},
		{"insecure on this machine is harmless", server("http://localhost/mcp", insecure), nil},
		{"0.0.0.0 is not this machine's name", server("http://0.0.0.0:8080/mcp"), []want{{3, "servers[0].url", "to 0.0.0.0, which is not this machine"}}},
		{"nor a name under localhost", server("http://app.localhost/mcp"), []want{{3, "servers[0].url", "not this machine"}}},
		{"nor localhost with a dot", server("http://localhost./mcp"), []want{{3, "servers[0].url", "not this machine"}}},
		{"nor a short form of 127.0.0.1", server("http://127.1/mcp"), []want{{3, "servers[0].url", "not this machine"}}},
		{"nor a zone", server("http://[::1%25lo]/mcp"), []want{{3, "servers[0].url", "not this machine"}}},

		// Credentials never over plain http, insecure or not.
		{"Authorization", server("http://mcp.example.com/mcp", insecure, headers("Authorization", "Bearer ${TOKEN}")),
			[]want{{5, "servers[0].headers.Authorization", `"Authorization" carries a credential, which plain http to mcp.example.com shows ` +
				`to anyone on the network path; use an https:// url (insecure = true never allows credentials)`}}},
		{"Cookie", server("http://mcp.example.com/mcp", insecure, headers("Cookie", "sid=1")), []want{{5, "servers[0].headers.Cookie", "carries a credential"}}},
		{"Proxy-Authorization", server("http://mcp.example.com/mcp", insecure, headers("Proxy-Authorization", "Basic eDp5")),
			[]want{{5, "servers[0].headers.Proxy-Authorization", "carries a credential"}}},
		{"X-API-Key", server("http://mcp.example.com/mcp", insecure, headers("X-API-Key", "k")), []want{{5, "servers[0].headers.X-API-Key", "carries a credential"}}},
		{"a name with token, any case", server("http://mcp.example.com/mcp", insecure, headers("PRIVATE-TOKEN", "t")),
			[]want{{5, "servers[0].headers.PRIVATE-TOKEN", "carries a credential"}}},
		{"a name with secret", server("http://mcp.example.com/mcp", insecure, headers("X-Client-Secret", "s")),
			[]want{{5, "servers[0].headers.X-Client-Secret", "carries a credential"}}},
		{"a name with auth", server("http://mcp.example.com/mcp", insecure, headers("X-Auth-User", "u")),
			[]want{{5, "servers[0].headers.X-Auth-User", "carries a credential"}}},
		{"a value that is an authorization", server("http://mcp.example.com/mcp", insecure, headers("X-Forwarded", "Bearer ${T}")),
			[]want{{5, "servers[0].headers.X-Forwarded", "carries a credential"}}},
		{"a header that carries none", server("http://mcp.example.com/mcp", insecure, headers("X-MCP-Toolsets", "repos,issues")), nil},
		{"oauth", server("http://mcp.example.com/mcp", insecure, "auth = \"oauth\""),
			[]want{{5, "servers[0].auth", `"oauth" would send its tokens over plain http to mcp.example.com`}}},
		{"a password in the url", server("http://alice:hunter2@mcp.example.com/mcp", insecure),
			[]want{{3, "servers[0].url", "has a user name or password in it"}}},
		{"a user name in the url", server("http://ghp_abc@mcp.example.com/mcp", insecure),
			[]want{{3, "servers[0].url", "has a user name or password in it"}}},
		{"without insecure, every problem at once", server("http://u:p@mcp.example.com/mcp", headers("Authorization", "x"), "auth = \"oauth\""),
			[]want{{3, "servers[0].url", "set insecure = true"}, {3, "servers[0].url", "user name or password"},
				{4, "servers[0].headers.Authorization", "carries a credential"}, {5, "servers[0].auth", "tokens"}}},

		// insecure where it means nothing.
		{"insecure on https", server("https://mcp.example.com/mcp", insecure),
			[]want{{4, "servers[0].insecure", `only applies to an http:// url; "https://mcp.example.com/mcp" is not one`}}},
		{"insecure on a command", "[[servers]]\nname = \"r\"\ncommand = \"x\"\ninsecure = true\n",
			[]want{{4, "servers[0].insecure", "only applies to a server whose url is http://"}}},

		// The audit forwarder and traces: no credentials over plain http.
		{"a forwarder over plain http", forward("http://collector.example.com:4318/v1/logs"), nil},
		{"with a token", forward("http://collector.example.com:4318/v1/logs", headers("Authorization", "Bearer ${OTLP_TOKEN}")),
			[]want{{4, "audit.forward.headers.Authorization", "carries a credential, which plain http to collector.example.com shows " +
				"to anyone on the network path; use an https:// url for a collector that is sent credentials"}}},
		{"splunk's token", "[audit.forward]\nto = \"splunk\"\nurl = \"http://splunk.example.com:8088/services/collector/event\"\n" +
			headers("Authorization", "Splunk ${HEC}") + "\n", []want{{4, "audit.forward.headers.Authorization", "carries a credential"}}},
		{"with a password in the url", forward("http://u:p@collector.example.com/v1/logs"), []want{{3, "audit.forward.url", "user name or password"}}},
		{"a forwarder with a token over https", forward("https://collector.example.com/v1/logs", headers("Authorization", "Bearer x")), nil},
		{"a forwarder with a token on this machine", forward("http://127.0.0.1:4318/v1/logs", headers("Authorization", "Bearer x")), nil},
		{"traces with a password", "[serve]\ntraces_endpoint = \"http://u:p@otel.example.com:4318/v1/traces\"\n",
			[]want{{2, "serve.traces_endpoint", "has a user name or password in it"}}},
		{"traces over plain http", "[serve]\ntraces_endpoint = \"http://otel.example.com:4318/v1/traces\"\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == nil {
				if _, err := Parse([]byte(tt.doc), "test.toml"); err != nil {
					t.Fatalf("%v\n%s", err, tt.doc)
				}
				return
			}
			errs := parseErrors(t, tt.doc)
			checkErrors(t, errs, tt.want)
			// Nothing secret in an error.
			for _, secret := range []string{"hunter2", "ghp_abc", "u:p@", "${TOKEN}", "Bearer", "sid=1", "eDp5"} {
				if strings.Contains(errs.Error(), secret) {
					t.Errorf("an error shows %q: %v", secret, errs)
				}
			}
		})
	}
}

// TestWrapRemotePlainHTTP: `aqlguard wrap --url` is checked as a
// [[servers]] entry is, and has no way to say insecure.
func TestWrapRemotePlainHTTP(t *testing.T) {
	if _, err := WrapRemote(Default(), "r", "http://mcp.example.com/mcp", "none", nil); err == nil || !strings.Contains(err.Error(), "plain http") {
		t.Errorf("wrap --url over plain http: %v", err)
	}
	if _, err := WrapRemote(Default(), "r", "http://127.0.0.1:9/mcp", "oauth", map[string]string{"Authorization": "Bearer x"}); err != nil {
		t.Errorf("wrap --url on this machine: %v", err)
	}
}

func TestCredentialHeader(t *testing.T) {
	for name, want := range map[[2]string]bool{
		{"Authorization", "x"}: true, {"authorization", "x"}: true, {"Proxy-Authorization", "x"}: true, {"Cookie", "x"}: true,
		{"X-API-Key", "x"}: true, {"X-Api-Key", "x"}: true, {"Api-Key", "x"}: true, {"X-Auth-Token", "x"}: true,
		{"Private-Token", "x"}: true, {"X-Secret", "x"}: true, {"X-Session-Id", "x"}: true, {"X-Password", "x"}: true,
		{"X-Credentials", "x"}: true, {"X-Anything", "Bearer abc"}: true, {"X-Anything", "basic eDp5"}: true,
		{"X-MCP-Toolsets", "repos"}: false, {"Accept", "application/json"}: false, {"User-Agent", "aqlguard"}: false,
		{"X-Request-Id", "bearer"}: false,
	} {
		if got := credentialHeader(name[0], name[1]); got != want {
			t.Errorf("credentialHeader(%q, %q) = %v, want %v", name[0], name[1], got, want)
		}
	}
}
