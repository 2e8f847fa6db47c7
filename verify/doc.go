// Package verify will hold out-of-band verification: challenges (128-bit
// codes from crypto/rand, UUIDv4 ids, expiry, one-time use), the display
// channels that show a code to a human and never to the model (a zenity
// dialog, or a configured command), and the per-principal limit on failed
// attempts (golang.org/x/time/rate).
//
// Empty until the verification issue: until then the guard refuses every
// call that would need a human, and nothing can unblock or approve.
package verify
