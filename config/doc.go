// Package config is aqlguard's configuration file as Go types: one type
// per TOML table ([servers], [serve], [state], [audit] and its
// [audit.forward], [verify], [safety], [flows], [agents.NAME],
// [limits]), the names of the values its keys take, the defaults of the
// keys a file leaves out, and the line-accurate [Errors] a file's
// problems are reported as.
//
// It holds no logic beyond the file itself: package policy reads and
// checks a file into a [Config] (policy.Load, policy.Parse) and
// compiles its rules (policy.Compile); the rooms that run what the file
// configures (downstream servers, serve, the state, audit forwarding,
// the human's channels) read their table here, so that none of them
// needs the compiled rules to know its settings.
package config
