package config

// Verify is the [verify] table: how a human is reached.
type Verify struct {
	Channel string   `toml:"channel"` // dialog | command
	Command []string `toml:"command"`
	// Timeout bounds how long confirm_operation waits for the human.
	Timeout Duration `toml:"timeout"`
	// InlineWait is how long a gated call itself waits for the human's
	// answer before it returns CONFIRMATION_REQUIRED with a token.
	InlineWait Duration `toml:"inline_wait"`
	// ConfirmationTTL is how long a confirmation token lives (max 15m).
	ConfirmationTTL Duration `toml:"confirmation_ttl"`
	// ChallengeTTL is how long a verification challenge lives.
	ChallengeTTL Duration `toml:"challenge_ttl"`
	// SessionApprovalTTL bounds an "allow this tool for this session"
	// answer, which otherwise lasts as long as the MCP session.
	SessionApprovalTTL Duration `toml:"session_approval_ttl"`
}
