package runtime

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/tracing"
)

// Sink receives a rule's emissions, one call per emission, from the sink's
// own goroutine.
type Sink interface {
	Name() string
	// Collect delivers one emission's rows. An error is counted in the
	// sink's metrics; retries are the sink cache's business.
	Collect(ctx context.Context, rows []map[string]any) error
}

// PerRowSink is implemented by sinks that may send each row of an emission
// as a message of its own (sendSingle): when PerRow is true their records
// in and out count rows, as eKuiper's sink counts the messages it is
// handed, not emissions.
type PerRowSink interface {
	PerRow() bool
}

// SlotSink is implemented by sinks that take projected rows in slots
// (row.SlotRows) as well as maps: the runtime then hands them the rule's
// slot rows, and builds maps only for the sinks without it.
type SlotSink interface {
	Sink
	// CollectSlots delivers one emission's rows in slots; rows are valid
	// only during the call (the runtime releases them after the last
	// sink), their values as long as the sink likes.
	CollectSlots(ctx context.Context, rows *row.SlotRows) error
}

// Flusher is implemented by sinks that buffer or pipeline writes: at a
// checkpoint barrier the runtime calls Flush, and acknowledges the barrier
// only once everything before it is delivered or durably cached.
type Flusher interface {
	Flush(ctx context.Context) error
}

// BatchEnder is implemented by sinks that hold their writes and send them
// together: the sink goroutine calls EndBatch after a batch (everything one
// input item made the operators emit) when no further batch is queued, so
// batches that queue up while the sink works leave together, and nothing
// waits for a batch that has not arrived. An error is counted in the
// sink's metrics, like a failed Collect.
type BatchEnder interface {
	EndBatch() error
}

// InlineSink is implemented by sinks that may run on the operator
// goroutine: a write only appends to a buffer (blocking at most for
// backpressure) and nothing waits for an acknowledgement. A qos 0 rule
// whose only sink reports Inline true has no sink goroutine: the operator
// goroutine delivers each batch itself, which saves a hand-off per input
// item. An inline sink keeps nothing of the rows and values it is given:
// it encodes them into its own bytes before Collect returns, as a direct
// rule's report that it kept nothing (Rule.DeliveryKept) relies on.
type InlineSink interface {
	Inline() bool
}

// PreCommitter is implemented by transactional sinks (qos 2): at barrier id
// they flush the open transaction's writes; the transaction commits when
// the checkpoint is durable.
type PreCommitter interface {
	PreCommit(ctx context.Context, id uint64) error
}

// prepareSinks gives every sink its metrics and decides whether the only
// sink runs on the operator goroutine (InlineSink: a qos 0 rule whose one
// sink reports Inline), building that sink's panic guard once. Called by
// New, before anything runs.
func (r *Rule) prepareSinks() {
	for i := range r.cfg.Sinks {
		m := &Metrics{}
		m.BufferLength = func() int64 {
			if !r.launched.Load() {
				return 0
			}
			return int64(len(r.sinkIn[i]))
		}
		r.SinkMetrics = append(r.SinkMetrics, m)
	}
	if len(r.cfg.Sinks) != 1 || r.cfg.Qos.Checkpointed() {
		return
	}
	if s, ok := r.cfg.Sinks[0].(InlineSink); !ok || !s.Inline() {
		return
	}
	r.inline = true
	r.inlineWhere = "sink " + r.cfg.Sinks[0].Name()
	r.onInlinePanic = func(e *panics.Error) {
		r.kept.Store(true)
		r.SinkMetrics[0].RecordException(e.Error(), r.nowMS())
		r.inlineFailed = true
		r.panicked(e)
	}
}

func (r *Rule) toSinks(it operator.Item) {
	r.curOp = len(r.cfg.Ops)
	if it.Kind != operator.Data && it.Kind != operator.Error && it.Kind != operator.Barrier {
		return
	}
	if it.Kind == operator.Error && !r.cfg.SendError {
		return // counted where it happened; emitted only with sendError
	}
	if it.Kind == operator.Data && it.Results == nil && it.Slots == nil {
		return
	}
	if it.Kind == operator.Data && r.cfg.Tap != nil && (r.cfg.Tapping == nil || r.cfg.Tapping()) {
		rows := it.Results
		if it.Slots != nil {
			rows = it.Slots.Maps()
		}
		r.kept.Store(true) // watchers read the rows later
		r.cfg.Tap(rows)
	}
	if len(r.cfg.Sinks) == 0 {
		r.discard(it)
		return
	}
	if r.batch == nil {
		r.batch, _ = r.sinkBatches.Get().(*sinkBatch)
		if r.batch == nil {
			r.batch = new(sinkBatch)
		}
	}
	r.batch.items = append(r.batch.items, it)
	if len(r.batch.items) == r.batchMax {
		r.flushSinks()
	}
}

// flushSinks hands what the last input item made the operators emit to the
// sinks, in one batch: one channel hand-off per input item rather than per
// emission. It runs on the operator goroutine after every input item.
func (r *Rule) flushSinks() {
	b := r.batch
	if b == nil {
		if r.inlineHeld.Load() && len(r.in) == 0 && !r.holdOutput {
			r.sinkInline(nil, true)
		}
		return
	}
	r.batch = nil
	b.refs.Store(int32(len(r.cfg.Sinks)))
	if r.inline {
		// While input items queue up, what they emit leaves together.
		r.sinkInline(b, len(r.in) == 0 && !r.holdOutput)
		return
	}
	for _, ch := range r.sinkIn {
		r.cfg.Tracker.Add(1)
		ch <- b
	}
}

// sinkBatch is what one input item made the operators emit, handed to the
// rule's sinks in order; the last sink done with it releases the items'
// slot rows and recycles the batch.
type sinkBatch struct {
	items []operator.Item
	refs  atomic.Int32 // sinks yet to finish with it
}

// sinkDone tells that one sink finished with b.
func (r *Rule) sinkDone(b *sinkBatch) {
	if b.refs.Add(-1) != 0 {
		return
	}
	for i := range b.items {
		r.discard(b.items[i])
	}
	clear(b.items)
	if cap(b.items) > maxBatchCap {
		b.items = nil // do not keep the room a burst needed
	}
	b.items = b.items[:0]
	r.sinkBatches.Put(b)
}

// maxBatchCap bounds the room a recycled sink batch keeps.
const maxBatchCap = 1024

// maxSinkBatch is the most items handed to the sinks at once; the sinks'
// channels hold BufferLength items in batches of up to this many.
const maxSinkBatch = 64

func (r *Rule) runSink(i int) {
	defer r.sinksDone.Done()
	failed := false
	for !r.sinkLoop(i, &failed) {
		failed = true
	}
}

// sinkLoop delivers to sink i until its channel closes (true) or the sink
// panics (false). Once failed, items are discarded so that the operator
// goroutine never blocks on a dead sink.
func (r *Rule) sinkLoop(i int, failed *bool) (closed bool) {
	sink, m := r.cfg.Sinks[i], r.SinkMetrics[i]
	slots, _ := sink.(SlotSink)
	defer panics.Catch("sink "+sink.Name(), func(e *panics.Error) {
		m.RecordException(e.Error(), r.nowMS())
		r.cfg.Tracker.Done()
		r.panicked(e)
	})
	ender, _ := sink.(BatchEnder)
	for b := range r.sinkIn[i] {
		if !*failed {
			// Nothing more queued: send what the batches held. While
			// batches queue up, they leave together.
			r.deliverBatch(i, sink, slots, ender, m, b, len(r.sinkIn[i]) == 0)
		}
		r.sinkDone(b)
		r.cfg.Tracker.Done()
	}
	return true
}

// deliverBatch hands the items of b (none when nil) to sink i, and ends
// the sink's batch (BatchEnder) when end is set.
func (r *Rule) deliverBatch(i int, sink Sink, slots SlotSink, ender BatchEnder, m *Metrics, b *sinkBatch, end bool) {
	if b != nil {
		nowMS := r.nowMS()
		for j := range b.items {
			r.deliver(i, sink, slots, m, &b.items[j], nowMS)
		}
	}
	if ender != nil && end {
		if err := ender.EndBatch(); err != nil {
			r.kept.Store(true)
			m.RecordException(err.Error(), r.nowMS())
		}
	}
}

// sinkInline delivers b (if not nil) to the only sink on the operator
// goroutine (see InlineSink), and ends the sink's batch when end is set;
// when not, a later call ends it (inlineHeld). A panic there is the sink's,
// as on a sink goroutine: it is recorded in the sink's metrics, the rule's
// owner is told, and what follows is discarded.
func (r *Rule) sinkInline(b *sinkBatch, end bool) {
	if !r.inlineFailed {
		sink, m := r.cfg.Sinks[0], r.SinkMetrics[0]
		func() {
			defer panics.Catch(r.inlineWhere, r.onInlinePanic)
			slots, _ := sink.(SlotSink)
			ender, _ := sink.(BatchEnder)
			r.deliverBatch(0, sink, slots, ender, m, b, end)
			r.inlineHeld.Store(ender != nil && !end)
		}()
	}
	if b != nil {
		r.sinkDone(b)
	}
}

// sinkRecords is what one item counts in a sink's records in and out: one
// emission, or its rows for a sink that sends each row on its own.
func sinkRecords(sink Sink, it *operator.Item) int64 {
	if it.Kind != operator.Data {
		return 1
	}
	if pr, ok := sink.(PerRowSink); !ok || !pr.PerRow() {
		return 1
	}
	if it.Slots != nil {
		return int64(it.Slots.Len())
	}
	return int64(len(it.Results))
}

// deliver hands one item to sink i, taken at engine time nowMS. Sink
// goroutine.
func (r *Rule) deliver(i int, sink Sink, slots SlotSink, m *Metrics, it *operator.Item, nowMS int64) {
	if it.Kind == operator.Barrier {
		r.sinkBarrier(i, it.Barrier)
		return
	}
	n := sinkRecords(sink, it)
	m.RecordsIn.Add(n)
	var start time.Time
	timed := m.timed()
	if timed {
		start = time.Now()
	}
	var span tracing.Span
	if it.Trace != nil {
		span = r.sinkSpan(i, it)
	}
	var err error
	switch {
	case it.Kind == operator.Error:
		err = sink.Collect(context.Background(), []map[string]any{{"error": it.Err.Error()}})
	case it.Slots != nil && slots != nil:
		err = slots.CollectSlots(context.Background(), it.Slots)
	case it.Slots != nil:
		err = sink.Collect(context.Background(), it.Slots.Maps())
	default:
		err = sink.Collect(context.Background(), it.Results)
	}
	if err != nil {
		panics.Rethrow(err) // a panic the sink recovered on its own goroutine
		r.kept.Store(true)  // the error may refer to a value
		m.RecordException(err.Error(), r.nowMS())
		span.Fail(err)
	} else {
		m.RecordsOut.Add(n)
	}
	span.End()
	if timed {
		m.ProcessLatency.Store(time.Since(start).Microseconds())
	}
	m.LastInvocation.Store(nowMS)
}

// sinkBarrier acknowledges barrier id for sink i once everything before it
// was delivered: flushing sinks are flushed first; a failed flush withholds
// the acknowledgement, so the checkpoint is abandoned rather than wrong.
func (r *Rule) sinkBarrier(i int, id uint64) {
	if p, ok := r.cfg.Sinks[i].(PreCommitter); ok {
		if err := p.PreCommit(context.Background(), id); err != nil {
			panics.Rethrow(err)
			r.SinkMetrics[i].RecordException(fmt.Sprintf("pre-commit for checkpoint %d: %v", id, err), r.nowMS())
			return
		}
	} else if f, ok := r.cfg.Sinks[i].(Flusher); ok {
		if err := f.Flush(context.Background()); err != nil {
			panics.Rethrow(err)
			r.SinkMetrics[i].RecordException(fmt.Sprintf("flush for checkpoint %d: %v", id, err), r.nowMS())
			return
		}
	}
	if r.cfg.OnSinkAck != nil {
		r.cfg.OnSinkAck(id, i)
	}
}
