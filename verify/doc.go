// Package verify reaches the human, never the model.
//
// A Channel asks a confirmation question (Allow once / Deny) and shows
// verification codes. DialogChannel uses native zenity dialogs and fails
// closed on a machine without a display, before zenity runs: zenity's
// "cannot open display" exit looks exactly like a human pressing Cancel.
// CommandChannel follows DESIGN.md's contract: one run of the configured
// program per request, one JSON object on its stdin, `allow` or `deny` on
// its stdout; when the question times out its whole process group is
// killed.
//
// A Challenge is one out-of-band verification: a 128-bit code from
// crypto/rand shown in Crockford base32 groups, a UUIDv4 id, an expiry, one
// use. Only a salted SHA-256 of the normalised code is kept and compared in
// constant time; the code itself exists only in the caller's hands on the
// way to the channel, and nothing in this package prints, logs or returns
// it in an error.
//
// Challenges live in memory until the store lands; failure rate limiting
// comes with it.
package verify
