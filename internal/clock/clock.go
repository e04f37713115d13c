// Package clock is the engine's only source of time. Production uses Wall;
// tests and `kuiper test` use Virtual, which moves only when told to and
// fires timers at exactly their due time.
package clock

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// Clock tells the time and schedules callbacks.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f once, at or after d from now, on a goroutine owned by
	// the clock. f must not block for long: it should hand work to its owner
	// (for example by sending to a channel) and return.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a scheduled callback.
type Timer interface {
	// Stop cancels the timer; it reports whether the call stopped it before
	// it fired.
	Stop() bool
}

// NowMilli returns c's current time in milliseconds since the Unix epoch.
func NowMilli(c Clock) int64 { return c.Now().UnixMilli() }

// Sleep waits d on c, or until ctx ends; it reports whether d passed.
func Sleep(ctx context.Context, c Clock, d time.Duration) bool {
	done := make(chan struct{})
	t := c.AfterFunc(d, func() { close(done) })
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// Wall is the real clock.
type Wall struct{}

// Now returns time.Now().
func (Wall) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (Wall) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Virtual is a manually advanced clock. It is safe for concurrent use.
type Virtual struct {
	mu     sync.Mutex
	now    int64 // ms
	seq    uint64
	timers timerHeap
}

// NewVirtual returns a virtual clock reading ms (milliseconds since epoch).
func NewVirtual(ms int64) *Virtual { return &Virtual{now: ms} }

// Now returns the virtual time.
func (v *Virtual) Now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return time.UnixMilli(v.now).UTC()
}

// Pending is the number of timers scheduled and not yet fired or stopped.
// Tests use it to advance time only while the code under test waits on the
// clock, not while it does real I/O.
func (v *Virtual) Pending() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.timers)
}

// AfterFunc schedules f at now+d (rounded down to the millisecond).
func (v *Virtual) AfterFunc(d time.Duration, f func()) Timer {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seq++
	t := &vtimer{v: v, due: v.now + d.Milliseconds(), seq: v.seq, f: f, index: -1}
	heap.Push(&v.timers, t)
	return t
}

// AdvanceTo moves the clock to ms. Every timer due in (now, ms] fires in
// order of due time (ties in scheduling order) with the clock reading exactly
// its due time; after each firing settle is called (it may be nil) so the
// caller can wait for the work the firing caused before the next one. Timers
// scheduled by a firing fire in the same advance when due by ms.
func (v *Virtual) AdvanceTo(ms int64, settle func()) {
	for {
		v.mu.Lock()
		if len(v.timers) == 0 || v.timers[0].due > ms {
			if ms > v.now {
				v.now = ms
			}
			v.mu.Unlock()
			return
		}
		t := heap.Pop(&v.timers).(*vtimer)
		if t.due > v.now {
			v.now = t.due
		}
		f := t.f
		v.mu.Unlock()
		f()
		if settle != nil {
			settle()
		}
	}
}

type vtimer struct {
	v     *Virtual
	due   int64
	seq   uint64
	f     func()
	index int
}

func (t *vtimer) Stop() bool {
	t.v.mu.Lock()
	defer t.v.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&t.v.timers, t.index)
	return true
}

type timerHeap []*vtimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].due != h[j].due {
		return h[i].due < h[j].due
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *timerHeap) Push(x any) {
	t := x.(*vtimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	n := len(old)
	t := old[n-1]
	old[n-1] = nil
	t.index = -1
	*h = old[:n-1]
	return t
}
