// Package effects says what each tool of a server does: its effects
// (reads, writes, deletes, executes, sends data out of the machine, or
// none) and the role of each of its arguments (a path, a URL, a command,
// code, a query, content written somewhere, an identifier). The guard
// judges a call by these, not by the tool's name or by what its server
// says of it.
//
// A tool's model comes from, in this order:
//
//  1. the configuration ([servers.effects], [servers.arguments]);
//  2. a shipped profile of a well-known server (profiles/*.json), which
//     applies to a tool only when the definition seen matches one the
//     profile was made from (MatchKey: the name, every description and the
//     input schema's shape), so a changed or imitated tool is not believed;
//  3. the tool's input schema and description;
//  4. last, a guess from the verb its name starts with, said as a guess.
//
// A server's annotations (readOnlyHint, destructiveHint, openWorldHint)
// may add effects, never take one away: a tool that says it only reads
// but takes a command is a tool that executes.
//
// The package is pure: it reads tool definitions and configuration and
// returns models; nothing here touches the network, a process or a disk.
package effects
