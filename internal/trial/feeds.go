package trial

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/output"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/runtime"
)

// Run is one rule test: its rule, its mock feeds and its listeners.
type Run struct {
	id         string
	clock      clock.Clock
	rule       *runtime.Rule
	sink       *sink
	feeds      []*feed
	maxRecords int
	expiry     clock.Timer
	done       chan struct{} // closed by stop
	logger     *slog.Logger

	mu        sync.Mutex
	started   bool
	stopped   bool
	fed       int
	timers    []clock.Timer
	listeners map[*listener]bool
	heard     bool // a listener was attached once
}

// feed is the mock source of one input.
type feed struct {
	name     string
	port     int
	table    bool
	loop     bool
	interval time.Duration
	data     []json.RawMessage
	opts     format.Options

	codec format.Codec // owned by the feed's timer chain
	next  int
}

type listener struct {
	ch   chan []byte
	gone chan struct{}
}

func (r *Run) start() error {
	r.mu.Lock()
	switch {
	case r.stopped:
		r.mu.Unlock()
		return fmt.Errorf("rule test %s: %w", r.id, ErrNotFound)
	case r.started:
		r.mu.Unlock()
		return fmt.Errorf("%w: rule test %s is started already", ErrState, r.id)
	}
	for _, f := range r.feeds {
		codec, err := format.New(format.JSON, f.opts)
		if err != nil {
			r.mu.Unlock()
			return fmt.Errorf("%w: mockSource %s: %w", ErrInvalid, f.name, err)
		}
		f.codec = codec
	}
	r.started = true
	r.rule.Start()
	r.mu.Unlock()
	// Tables first, so the first stream records find them loaded; sent
	// without the lock, which the sink takes.
	for _, f := range r.feeds {
		if f.table {
			r.sendTable(f)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.feeds {
		if !f.table && !r.stopped {
			r.schedule(f, 0)
		}
	}
	return nil
}

// schedule arms the timer that sends f's next record after d. Called with
// r.mu held.
func (r *Run) schedule(f *feed, d time.Duration) {
	r.timers = append(r.timers, r.clock.AfterFunc(d, func() { r.sendNext(f) }))
}

// sendNext sends f's next record and arms the one after it: one timer at a
// time per feed, so a feed's records go in order.
func (r *Run) sendNext(f *feed) {
	defer panics.Catch("rule test "+r.id+" mockSource "+f.name, func(e *panics.Error) { // a timer's goroutine
		r.logger.Error("rule test feed panicked", "rule", r.id, "err", e.Error(), "stack", string(e.Stack))
		r.panicked(e)
	})
	r.mu.Lock()
	if r.stopped || r.fed >= r.maxRecords || f.next >= len(f.data) {
		r.mu.Unlock()
		return
	}
	rec := f.data[f.next]
	f.next++
	if f.loop && f.next == len(f.data) {
		f.next = 0
	}
	r.fed++
	r.mu.Unlock()
	tuples, err := f.codec.(format.TupleDecoder).DecodeTuples(nil, rec)
	if err == nil {
		r.send(f, tuples)
	}
	r.mu.Lock()
	if !r.stopped {
		r.schedule(f, f.interval)
	}
	r.mu.Unlock()
}

// sendTable sends all of a table's records at once, as a scan table's
// source delivers its contents.
func (r *Run) sendTable(f *feed) {
	var tuples []*row.Tuple
	for _, rec := range f.data {
		r.mu.Lock()
		full := r.fed >= r.maxRecords
		r.fed++
		r.mu.Unlock()
		if full {
			break
		}
		if out, err := f.codec.(format.TupleDecoder).DecodeTuples(tuples, rec); err == nil {
			tuples = out
		}
	}
	r.send(f, tuples)
}

func (r *Run) send(f *feed, tuples []*row.Tuple) {
	now := clock.NowMilli(r.clock)
	for _, t := range tuples {
		t.Emitter, t.Timestamp = f.name, now
	}
	r.rule.Send(operator.Item{Kind: operator.Data, Input: f.port, Tuples: tuples})
}

// panicked ends the run after a panic of its rule (logged by the
// runtime) or of a feed: the listeners receive the error as a result, as
// with sendError, then see the run end. The process goes on.
func (r *Run) panicked(e *panics.Error) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = r.sink.Collect(ctx, []map[string]any{{"error": e.Error()}})
		r.stop()
	}()
}

// stop ends the run: no more records, the rule stopped, the listeners'
// channels closed. It is idempotent.
func (r *Run) stop() {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.stopped = true
	for _, t := range r.timers {
		t.Stop()
	}
	if r.expiry != nil {
		r.expiry.Stop()
	}
	started := r.started
	r.mu.Unlock()
	close(r.done)
	if started {
		r.rule.Stop()
	}
	r.mu.Lock()
	for l := range r.listeners {
		close(l.ch)
	}
	r.listeners = nil
	r.mu.Unlock()
}

// listen attaches a listener; nil when the run has stopped.
func (r *Run) listen() *listener {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil
	}
	if r.listeners == nil {
		r.listeners = map[*listener]bool{}
	}
	l := &listener{ch: make(chan []byte, listenerBuffer), gone: make(chan struct{})}
	r.listeners[l] = true
	r.heard = true
	return l
}

// leave detaches l and reports whether the run is left without listeners.
func (r *Run) leave(l *listener) (last bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.listeners[l] {
		delete(r.listeners, l)
		close(l.gone)
	}
	return !r.stopped && r.heard && len(r.listeners) == 0
}

// sink hands the rule's results, shaped by the test's sinkProps, to the
// listeners. With no listener a result is dropped; a listener that lags
// listenerBuffer payloads behind makes the rule wait until it reads, leaves
// or the run ends.
type sink struct {
	run    *Run
	shaper *output.Shaper
}

func (s *sink) Name() string { return "ruletest" }

func (s *sink) Collect(ctx context.Context, rows []map[string]any) error {
	msgs, err := s.shaper.Shape(rows)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		s.run.mu.Lock()
		ls := make([]*listener, 0, len(s.run.listeners))
		for l := range s.run.listeners {
			ls = append(ls, l)
		}
		s.run.mu.Unlock()
		for _, l := range ls {
			select {
			case l.ch <- m.Payload:
			case <-l.gone:
			case <-s.run.done:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}
