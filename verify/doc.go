// Package verify reaches the human, never the model (MCP-AQL 8.8).
//
// # Channels
//
// A Channel asks a confirmation question (Ask: Allow once, Deny, or None
// when nobody answers in time) and shows verification codes (Show). Every
// channel fails closed: when it cannot reach a human it returns an error,
// and nothing is approved.
//
//   - DialogChannel puts up native dialogs through github.com/ncruces/zenity:
//     a question titled "aqlguard: allow this action?" with the agent,
//     operation, reason, action and indented JSON arguments, and a code
//     dialog titled "aqlguard: verification code" with the context and
//     the code, selectable. On Linux and the BSDs the code dialog is
//     zenity --text-info, run by this package with the text on its stdin:
//     a code in the dialog's arguments could be read from /proc by any
//     process, the agent's included. It refuses to run without DISPLAY or
//     WAYLAND_DISPLAY (ErrNoDisplay), because zenity's "cannot open
//     display" exit is indistinguishable from a human pressing Cancel, and
//     without a dialog program. Text shown to the human has control and
//     bidi characters escaped, so what they read is what will run.
//   - CommandChannel implements DESIGN.md's command contract: one run of
//     the configured argv per request, one JSON object on its stdin,
//     "allow" or "deny" on the first line of its stdout; anything else, a
//     failing program or no answer in time is not an approval, and the
//     program's process group is killed when the time is up.
//
// # Challenges
//
// A Challenge is one out-of-band verification: a 128-bit code from
// crypto/rand, shown as 26 Crockford base32 digits in hyphenated groups; a
// UUIDv4 id (ValidChallengeID checks the form); an expiry; one successful
// use. Input is forgiving (NormalizeCode: case, hyphens and spaces do not
// matter; O reads as 0, I and L as 1). Only a salted SHA-256 of the
// normalised code is kept, compared in constant time. The code exists in
// plaintext only between NewChallenge and the channel: a Challenge never
// prints, logs or serialises it (nor its hash), and no error in this
// package carries it.
//
// Challenges live in memory until the store persists them; the limit on
// failed attempts per principal (golang.org/x/time/rate) comes with it.
package verify
