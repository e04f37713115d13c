package rulemgr

import (
	"context"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
)

// startMarks writes the rules' start markers by group commit: a change
// requested while a write is in flight joins the next transaction, so
// rules starting together (a boot, concurrent creates, a shutdown) cost a
// few durable writes instead of one each. Each caller waits until its own
// change is committed, so a marker is in the catalog before its rule
// starts, as with one write per rule. Changes apply in request order.
//
// The goroutine that writes runs only while changes are pending; it is
// started by the request that finds none in flight.
type startMarks struct {
	cat     *catalog.Catalog
	node    string
	timeout time.Duration // bounds one transaction

	mu      sync.Mutex
	pending []catalog.RuleStart
	waiters []chan error
	writing bool
}

// write applies c and returns once it is committed, or with the error of
// the transaction that carried it. It waits whatever happens to the
// caller's context: returning before the outcome is known would leave the
// caller unsure whether its marker is in the catalog.
func (w *startMarks) write(c catalog.RuleStart) error {
	done := make(chan error, 1)
	w.mu.Lock()
	w.pending = append(w.pending, c)
	w.waiters = append(w.waiters, done)
	if !w.writing {
		w.writing = true
		go w.flush()
	}
	w.mu.Unlock()
	return <-done
}

// flush writes the pending changes, one transaction per batch, until none
// is left.
func (w *startMarks) flush() {
	for {
		w.mu.Lock()
		batch, waiters := w.pending, w.waiters
		w.pending, w.waiters = nil, nil
		if len(batch) == 0 {
			w.writing = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
		err := w.cat.WriteRuleStarts(ctx, w.node, batch)
		cancel()
		for _, d := range waiters {
			d <- err
		}
	}
}
