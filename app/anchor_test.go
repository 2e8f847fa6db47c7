package app

import (
	"testing"

	"github.com/aqlguard/aqlguard/config"
)

// TestAnchorsSaid: the start line says where anchors go, and warns of
// their being off only where the audit log is meant for the system log.
func TestAnchorsSaid(t *testing.T) {
	syslogCfg := &config.Config{}
	syslogCfg.Audit.Forward = &config.Forward{To: "syslog"}
	for _, tt := range []struct {
		name, off string
		cfg       *config.Config
		said      string
		warn      bool
	}{
		{"on", "", syslogCfg, "system log", false},
		{"off, the audit meant for syslog", "no /dev/log", syslogCfg, "off (no /dev/log)", true},
		{"off, no forwarding", "no /dev/log", &config.Config{}, "off (no /dev/log)", false},
	} {
		said, warn := AnchorsSaid(tt.cfg, tt.off)
		if said != tt.said || warn != tt.warn {
			t.Errorf("%s: %q, %v; want %q, %v", tt.name, said, warn, tt.said, tt.warn)
		}
	}
}
