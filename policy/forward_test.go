package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/config"
)

// TestForwardSyslog: the syslog addresses [audit.forward] takes (RELP,
// whose collector confirms each record, and plain syslog over TCP or
// TLS), and assume_delivered_after, which only plain syslog has a use
// for.
func TestForwardSyslog(t *testing.T) {
	doc := func(address string, extra ...string) string {
		return "[audit.forward]\nto = \"syslog\"\naddress = \"" + address + "\"\n" + strings.Join(extra, "\n") + "\n"
	}
	tests := []struct {
		name, doc string
		err       string // "" loads
		after     time.Duration
	}{
		{"relp", doc("relp://siem.example.com:2514"), "", config.DefaultAssumeDeliveredAfter},
		{"relp over tls", doc("relp+tls://siem.example.com:2514"), "", config.DefaultAssumeDeliveredAfter},
		{"plain tcp", doc("tcp://siem.example.com:514"), "", config.DefaultAssumeDeliveredAfter},
		{"tls with its own wait", doc("tls://siem.example.com:6514", `assume_delivered_after = "45s"`), "", 45 * time.Second},
		{"udp is no transport of ours", doc("udp://siem.example.com:514"), `"udp://siem.example.com:514" is not "relp://HOST:PORT"`, 0},
		{"relp without a port", doc("relp://siem.example.com"), "is not", 0},
		{"a wait for relp, which confirms", doc("relp://siem.example.com:2514", `assume_delivered_after = "45s"`),
			"only applies to plain syslog", 0},
		{"a wait for otlp", "[audit.forward]\nto = \"otlp\"\nurl = \"https://c.example.com/v1/logs\"\nassume_delivered_after = \"45s\"\n",
			"only applies to plain syslog", 0},
		{"too short", doc("tcp://siem.example.com:514", `assume_delivered_after = "100ms"`), "out of range", 0},
		{"too long", doc("tcp://siem.example.com:514", `assume_delivered_after = "1h"`), "out of range", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.doc), "config.toml")
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := cfg.Audit.Forward.AssumeDeliveredAfter.Duration; got != tt.after {
					t.Fatalf("assume_delivered_after %s, want %s", got, tt.after)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err %v, want %q", err, tt.err)
			}
		})
	}
}
