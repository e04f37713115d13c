package runtime

import "sync"

// Tracker counts items in flight through a rule so a driver on a virtual
// clock can wait until everything an input or a timer caused has been
// processed. Production rules run without one (nil).
type Tracker struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending int
}

// NewTracker returns an idle tracker.
func NewTracker() *Tracker {
	t := &Tracker{}
	t.cond = sync.NewCond(&t.mu)
	return t
}

// Add records n more items in flight.
func (t *Tracker) Add(n int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.pending += n
	if t.pending == 0 {
		t.cond.Broadcast()
	}
	t.mu.Unlock()
}

// Done records one item fully processed.
func (t *Tracker) Done() { t.Add(-1) }

// Wait blocks until nothing is in flight.
func (t *Tracker) Wait() {
	if t == nil {
		return
	}
	t.mu.Lock()
	for t.pending > 0 {
		t.cond.Wait()
	}
	t.mu.Unlock()
}
