// Package testwait lets tests wait for a condition instead of sleeping for
// a fixed time: a loaded machine makes a fixed sleep too short (a flake)
// and an idle one makes it too long (a slow suite). Until polls with a
// short, growing interval and fails the test, naming what it waited for,
// only when the condition is still false after a generous limit, so the
// limit is never a timing assertion.
package testwait

import (
	"testing"
	"time"
)

// Limit is how long Until waits before it fails the test. It is long on
// purpose: a correct program meets the condition far sooner, and a loaded
// CI machine must not turn a wait into a failure.
const Limit = 30 * time.Second

// Until polls cond until it returns true, and fails the test with
// "timed out waiting for <what>" after Limit.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Within(t, Limit, what, cond)
}

// Within is Until with its own limit.
func Within(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(limit, cond) {
		t.Fatalf("timed out after %s waiting for %s", limit, what)
	}
}

// Poll polls cond until it returns true (true) or limit passes (false),
// for callers that report the failure themselves (a benchmark, a helper
// goroutine that may not call t.Fatal).
func Poll(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	interval := time.Millisecond
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(interval)
		interval = min(2*interval, 50*time.Millisecond)
	}
}
