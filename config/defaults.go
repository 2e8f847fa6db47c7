package config

import (
	"time"
)

// Defaults for keys a file leaves out; introspection reports them. Payload
// limit defaults are applied to Config.Limits.
const (
	DefaultMode               = "semantic"
	DefaultAgent              = "default"
	DefaultMaxAutonomousSteps = 100
	DefaultRiskTolerance      = "moderate"
	DefaultChannel            = "dialog"
	DefaultVerifyTimeout      = 50 * time.Second
	DefaultInlineWait         = 10 * time.Second
	DefaultConfirmationTTL    = 5 * time.Minute
	MaxConfirmationTTL        = 15 * time.Minute
	DefaultChallengeTTL       = 5 * time.Minute
	DefaultSessionApprovalTTL = 8 * time.Hour
	MaxSessionApprovalTTL     = 24 * time.Hour
	DefaultMaxArgumentBytes   = 64 << 10
	DefaultStartTimeout       = 30 * time.Second
	DefaultOAuthStartTimeout  = 5 * time.Minute
	DefaultCallTimeout        = 10 * time.Minute
	DefaultMaxSessions        = 32
	DefaultSessionIdleTimeout = 30 * time.Minute
	MaxCallTimeout            = 24 * time.Hour
	DefaultStateLockTimeout   = 2 * time.Second
	MaxStateLockTimeout       = 30 * time.Second
)

// The names the file's kind keys take. Each names a part that
// registers itself under that name where it lives (store, pgstate,
// verify, audit/forward), so that the process's assembly (package app)
// lists none of them; app's tests hold these lists and the registries
// equal. A new part adds its name here with its settings.
var (
	// StateBackends are [state] backend's values.
	StateBackends = []string{StateBolt, StatePostgres}
	// Channels are [verify] channel's values.
	Channels = []string{"dialog", "command"}
	// ForwardDestinations are [audit.forward] to's values.
	ForwardDestinations = []string{"syslog", "otlp", "splunk", "file"}
)
