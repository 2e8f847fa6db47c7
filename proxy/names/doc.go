// Package names is what aqlguard makes of the names a client sees
// across all its servers, as pure functions: the one rule that tells
// tools and prompts of different servers apart (Shown), the names two
// servers both claim (Collisions), and server names made to pass for
// another server's (Imitation). The reports are for the human, at start,
// in `aqlguard doctor` and in `aqlguard policy check`; nothing here
// refuses anything.
package names
