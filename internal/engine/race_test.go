//go:build race

package engine

// raceEnabled: the race detector makes sync.Pool drop a share of what is
// put back, so pooled cells are allocated again now and then.
const raceEnabled = true
