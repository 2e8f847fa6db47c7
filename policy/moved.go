package policy

// The configuration file's types, defaults and value names moved to
// package config (issue 33). These aliases keep the tree building until
// /work/notes/w33cfg-rename.sh config rewrites every policy.X below to
// config.X and deletes this file; nothing new should use them.

import "github.com/aqlguard/aqlguard/config"

type (
	AgentOverride = config.AgentOverride
	ArgRule       = config.ArgRule
	Audit         = config.Audit
	Config        = config.Config
	Duration      = config.Duration
	Error         = config.Error
	Errors        = config.Errors
	Flows         = config.Flows
	Forward       = config.Forward
	Limits        = config.Limits
	RiskRule      = config.RiskRule
	Safety        = config.Safety
	Sandbox       = config.Sandbox
	Serve         = config.Serve
	ServeClient   = config.ServeClient
	ServeOAuth    = config.ServeOAuth
	Server        = config.Server
	State         = config.State
	Verify        = config.Verify
)

const (
	DefaultAgent                = config.DefaultAgent
	DefaultAssumeDeliveredAfter = config.DefaultAssumeDeliveredAfter
	DefaultCallTimeout          = config.DefaultCallTimeout
	DefaultChallengeTTL         = config.DefaultChallengeTTL
	DefaultChannel              = config.DefaultChannel
	DefaultConfirmationTTL      = config.DefaultConfirmationTTL
	DefaultFlowScanBytes        = config.DefaultFlowScanBytes
	DefaultForwardBatch         = config.DefaultForwardBatch
	DefaultInlineWait           = config.DefaultInlineWait
	DefaultMaxArgumentBytes     = config.DefaultMaxArgumentBytes
	DefaultMaxAutonomousSteps   = config.DefaultMaxAutonomousSteps
	DefaultMaxSessions          = config.DefaultMaxSessions
	DefaultMode                 = config.DefaultMode
	DefaultOAuthStartTimeout    = config.DefaultOAuthStartTimeout
	DefaultPrincipalIdleTimeout = config.DefaultPrincipalIdleTimeout
	DefaultRiskTolerance        = config.DefaultRiskTolerance
	DefaultSessionApprovalTTL   = config.DefaultSessionApprovalTTL
	DefaultSessionIdleTimeout   = config.DefaultSessionIdleTimeout
	DefaultStartTimeout         = config.DefaultStartTimeout
	DefaultStateLockTimeout     = config.DefaultStateLockTimeout
	DefaultVerifyTimeout        = config.DefaultVerifyTimeout
	FlowInjectedFlag            = config.FlowInjectedFlag
	FlowInjectedQuarantine      = config.FlowInjectedQuarantine
	FlowSecretsMark             = config.FlowSecretsMark
	FlowSecretsRedact           = config.FlowSecretsRedact
	LegacyClient                = config.LegacyClient
	MaxAssumeDeliveredAfter     = config.MaxAssumeDeliveredAfter
	MaxCallTimeout              = config.MaxCallTimeout
	MaxConfirmationTTL          = config.MaxConfirmationTTL
	MaxFlowScanBytes            = config.MaxFlowScanBytes
	MaxForwardBatch             = config.MaxForwardBatch
	MaxSessionApprovalTTL       = config.MaxSessionApprovalTTL
	MaxStateLockTimeout         = config.MaxStateLockTimeout
	ShippedName                 = config.ShippedName
	StateBolt                   = config.StateBolt
	StatePostgres               = config.StatePostgres
)

var (
	DefaultSignatureAlgorithms = config.DefaultSignatureAlgorithms
	SandboxModes               = config.SandboxModes
	SandboxNetworks            = config.SandboxNetworks
	SignatureAlgorithms        = config.SignatureAlgorithms
	TokenDigestRE              = config.TokenDigestRE
)

// ValidAgentName is config.ValidAgentName.
func ValidAgentName(s string) bool { return config.ValidAgentName(s) }
