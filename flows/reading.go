//go:build !benchnoreading

package flows

// readingOff is false in every build but bench's `-tags benchnoreading`
// one (reading_off.go): there is no runtime or config switch that
// turns the reading of results off.
const readingOff = false
