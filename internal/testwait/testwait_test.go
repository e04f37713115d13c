package testwait

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestPollReturnsOnceTrue(t *testing.T) {
	var n atomic.Int32
	if !Poll(time.Minute, func() bool { return n.Add(1) >= 3 }) {
		t.Fatal("Poll gave up on a condition that became true")
	}
	if got := n.Load(); got != 3 {
		t.Fatalf("cond called %d times, want 3 (Poll must stop at the first true)", got)
	}
}

func TestPollGivesUp(t *testing.T) {
	start := time.Now()
	if Poll(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("Poll reported a condition that never held")
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Fatal("Poll gave up before its limit")
	}
}

type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
}

func TestWithinFails(t *testing.T) {
	r := &fatalRecorder{TB: t}
	Within(r, 5*time.Millisecond, "nothing", func() bool { return false })
	if r.msg == "" {
		t.Fatal("Within did not fail the test")
	}
}
