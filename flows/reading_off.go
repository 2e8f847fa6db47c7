//go:build benchnoreading

package flows

// Built only with -tags benchnoreading, for bench/: Observe hands every
// result on unread (no parse, no secret or injection scan, nothing
// kept), so that the latency benchmark measures the reading's own share
// of a call as the difference of two builds of one commit, in one run
// (bench/README.md). The tag is never in a release build: such a
// binary guards no result.
const readingOff = true
