// Package policy reads aqlguard's TOML configuration into a
// config.Config (package config holds the file's types, defaults and
// errors), checks it, and compiles the safety policy the evaluator
// applies. It reads the configuration file and nothing else.
//
// # Loading
//
// [Load] and [Parse] decode a file, check it, and fill in defaults. They
// report every problem they can find, not just the first, as a [config.Errors]
// value whose entries carry the file, line, column and key path
// (servers[1].url, safety.deny[2], agents."ci.bot".loop) of each problem:
// TOML syntax errors (after which nothing else can be checked), unknown keys
// (key names are matched exactly, so "Deny" is not "deny"), values of the
// wrong type, keys defined twice, and out-of-range or inconsistent values.
// A key that is absent takes its default; a key that is present must hold a
// valid value, so `max_autonomous_steps = 0` is an error rather than a way
// of asking for the default. config.example.toml at the repository root
// documents every key. [Default] returns the embedded default.toml.
//
// # Patterns
//
// deny, requires_approval, auto_approve, argument rules and risk rules use
// gobwas/glob syntax with no separators: `*` matches any run of characters
// (including '.', '/', '_' and spaces), `?` one character, `[abc]`, `[a-z]`
// and `[!a-z]` one character from a set, `{a,b}` either alternative, and
// `\` quotes the next character. A pattern must match the whole subject.
//
// Matching is case-insensitive and blind to how white space is spelled:
// the pattern source and every subject go through [Normalize], which lower-
// cases, folds each run of Unicode white space to one space and trims both
// ends. So `*drop table*` matches "DROP\t\tTABLE users". Patterns longer
// than [MaxPatternLength] bytes or not valid UTF-8 are rejected.
//
// Pattern lists are matched against a call's names ([NameForms]: the
// operation name fs_write_file, the tool's own name write_file and
// writeFile, server.tool fs.write_file), its arguments (text patterns),
// and a reported step's action hint. A name pattern matches only the
// names it speaks of, as its literal head says ([Pattern.FirstName]):
// "fs.*" server fs's server.tool names, "*.x" any server's by the tool's
// own name, "get_*" (a word of the naming vocabulary, verbs.go) the
// tool's own name, "fs_*" with a configured server fs that server's
// operation names, anything else every name. One exception: auto_approve does not look at the
// hint of a proxied call, because that hint carries the arguments, which
// the model writes (a reported step, with no server, is only its hint).
// An argument rule matches the value of one named
// argument (strings as they are, other JSON values JSON-encoded) of the
// calls whose operation name or server-qualified name matches the rule's
// operation glob.
//
// # The shipped rules
//
// default.toml's lists (deny, refuse, requires_approval, auto_approve,
// rules, risk_rules, shell_arguments, secret_arguments) are a layer of
// their own beneath every configuration ([LayerShipped], shipped.go): a
// file's lists are added to them, and a file that says inherit = false
// under [safety] starts from nothing. [Policy.InForce] lists each entry in
// force with its [Origin].
//
// # Merging agent overrides
//
// [Compile] produces the effective [Policy] of one principal: [safety],
// then [agents.<principal>] on top. Scalars (loop, max_autonomous_steps,
// risk_tolerance) set in the agent table replace [safety]'s. Lists (deny,
// requires_approval, auto_approve) and rules and risk rules are appended
// to [safety]'s, duplicates dropped. Because evaluation resolves deny >
// requires_approval > auto_approve, an agent table can exempt calls from the
// remaining stages but can never lift a [safety] deny or requires_approval.
// The same holds for the shipped rules beneath [safety]: nothing a file
// adds lifts a shipped deny, refuse or requires_approval. An entry written
// twice (in two layers, or twice in one) is in force once, where it was
// first written. Policy.Version is a digest of the effective policy that
// approvals are bound to, shipped rules included.
package policy
