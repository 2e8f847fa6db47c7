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
