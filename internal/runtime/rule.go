// Package runtime runs a rule's operators: one goroutine owns the fused
// operator chain, one goroutine per sink delivers results, and bounded
// channels between them apply backpressure. Timers and barriers travel
// in-band through the same channels as data. A rule that has received
// nothing holds neither channels nor goroutines: both come with its first
// item (a record, a barrier or a timer tick), so thousands of idle rules
// cost only their plans.
//
// Two shortcuts save hand-offs where nothing needs them: a qos 0 rule's
// only sink, when it merely appends to a connection's buffer (InlineSink),
// runs on the operator goroutine; and a rule made of preprocess, filter and
// project with such a sink has no goroutine at all: its operators run on
// the goroutine that sends it items, one sender at a time (canRunDirect).
package runtime

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/tracing"
)

// slotEmitter is a last operator that can emit its rows in slots
// (operator.Project).
type slotEmitter interface {
	EnableSlots()
}

// Config describes a rule to run.
type Config struct {
	ID        string
	Ops       []operator.Operator
	Sinks     []Sink
	Clock     clock.Clock
	Env       function.Env
	Stats     *eval.RuleStats
	SendError bool
	// BufferLength bounds every channel of the rule (default 1024): the
	// input channel in items (each a source's delivery), a sink's channel
	// in emissions, handed over in batches of up to 64 (its buffer length
	// metric counts batches). The channels are allocated with the rule's
	// first item.
	BufferLength int
	// Tracker, when set, counts items in flight (virtual-clock replay).
	Tracker *Tracker
	Logger  *slog.Logger

	// Inputs is the number of attached sources that inject barriers
	// (default 1). Qos 2 aligns barriers: items from a source whose
	// barrier arrived wait until every source delivered it.
	Inputs int
	Qos    rule.QoS
	// State is rule-level state outside the operators (analytic function
	// state, hit counters), snapshotted with them.
	State map[string]operator.Stateful
	// OnSnapshot receives the operators' snapshot for barrier id, from the
	// operator goroutine, once the barrier is aligned.
	OnSnapshot func(snap *Snapshot)
	// OnSinkAck is called by sink i once everything before barrier id was
	// delivered (or durably cached).
	OnSinkAck func(id uint64, sink int)
	// OnPanic is called once, from the panicking goroutine, when an
	// operator or sink panics. The panic is logged with its stack; the
	// goroutine then discards what reaches it, so nothing blocks, and the
	// owner is expected to stop the rule.
	OnPanic func(err *panics.Error)
	// Tap, when set, is handed every emission's rows on the operator
	// goroutine before the sinks get them; it must not block or change
	// them (a live output tap).
	Tap func(rows []map[string]any)
	// Tapping, when set, reports whether anyone watches the tap; while
	// nobody does, emissions in slots are not turned into maps for it.
	Tapping func() bool
	// EndsDeliveries tells that data items come from senders that call
	// EndDelivery once they handed a delivery to every rule (stream
	// subscriptions): a rule running on the sender's goroutine then holds
	// its sink's writes until EndDelivery, so that the writes of all the
	// rules one delivery reached, on a shared connection, leave in one
	// system call. Without it such a rule ends its sink's batch after
	// every Send.
	EndsDeliveries bool
	// Trace is the rule's tracing switch (nil: never traced). While it is
	// on, Send samples the records it is given (see trace.go).
	Trace *tracing.Rule
	// KeepsValues tells that the rule's expressions may keep values they
	// are given beyond the record (extension or JavaScript functions,
	// analytic functions): the rule then never reports a delivery as kept
	// nothing (DeliveryKept).
	KeepsValues bool
}

// Snapshot is the state of a rule's operators at one barrier.
type Snapshot struct {
	ID uint64
	// Ops maps "<index>:<name>" of each stateful operator to its bytes.
	Ops map[string][]byte
	// State holds the rule-level state by name.
	State map[string][]byte
}

// Rule is a running rule. Start it once; Stop it once.
type Rule struct {
	cfg Config
	// in and sinkIn are allocated, and the goroutines started, by launch;
	// launched is set once they are, for readers outside launchOnce.
	in         chan *operator.Item // pointers: a buffered slot costs 8 bytes, not a whole Item
	sinkIn     []chan *sinkBatch
	launchOnce sync.Once
	launched   atomic.Bool
	quit       chan struct{}
	opsDone    chan struct{}
	sinksDone  sync.WaitGroup
	opCtx      *operator.Context

	// emits[i] passes operator i's output on; built once on the operator
	// goroutine so that no closure is allocated per item.
	emits []operator.Emit
	// inItems and sinkBatches recycle the cells that carry items through
	// the input channel and to the sinks, so that neither costs an
	// allocation per item. An input cell is put back by the operator
	// goroutine once it copied the item out; a sink batch by the last sink
	// done with it (see sinkBatch).
	inItems     sync.Pool
	sinkBatches sync.Pool
	// batch collects what the item being processed emits for the sinks;
	// they get it in one hand-off when the item is done, or when it holds
	// batchMax items (flushSinks). Operator goroutine only.
	batch    *sinkBatch
	batchMax int
	// itemMS is the engine time the operator goroutine took its current
	// item at: the operators' last invocation time. Operator goroutine only.
	itemMS int64

	// sendMu orders enqueues against Stop: once stopped is set, nothing
	// more enters the input channel.
	sendMu  sync.RWMutex
	stopped bool

	OpMetrics   []*Metrics
	SinkMetrics []*Metrics

	// curOp is the operator the operator goroutine is in (for the panic
	// message); failed is set there after a panic.
	curOp     int
	opsFailed bool
	panicOnce sync.Once

	// inline is set when the only sink runs on the operator goroutine
	// (InlineSink); inlineFailed once it panicked there. Operator
	// goroutine only, after New.
	inline       bool
	inlineFailed bool
	inlineHeld   atomic.Bool // the sink holds writes it was not told to end
	// holdOutput is set while a direct rule processes a data item whose
	// sender calls EndDelivery (Config.EndsDeliveries). Under directMu.
	holdOutput bool
	// direct is set when the rule has no goroutine of its own: Send runs
	// the operators and the inline sink on the sender's goroutine, one
	// sender at a time (directMu), which saves the hand-off to the
	// operator goroutine (canRunDirect). directAl is built by launch.
	direct   bool
	directMu sync.Mutex
	directAl *aligner
	// Built once by New, so that the per-item panic guards of the inline
	// and direct paths allocate nothing.
	inlineWhere   string
	onInlinePanic func(*panics.Error)
	onOpPanic     func(*panics.Error)

	// tracer is the state of tracing (trace.go), used only while a
	// traced item is in flight.
	tracer tracer

	// keeps is set when the rule may hold on to what it is sent (it has
	// goroutines of its own, or KeepsValues); kept when a direct
	// rule may have left a reference to something it was sent since
	// DeliveryKept last asked (tap, tracing, an error, a panic).
	keeps bool
	kept  atomic.Bool
}

// New prepares a rule; nothing runs until Start.
func New(cfg Config) *Rule {
	if cfg.BufferLength <= 0 {
		cfg.BufferLength = 1024
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Inputs <= 0 {
		cfg.Inputs = 1
	}
	r := &Rule{
		cfg:     cfg,
		quit:    make(chan struct{}),
		opsDone: make(chan struct{}),
	}
	for range cfg.Ops {
		r.OpMetrics = append(r.OpMetrics, &Metrics{})
	}
	r.prepareSinks()
	if n := len(cfg.Ops); n > 0 {
		if p, ok := cfg.Ops[n-1].(slotEmitter); ok {
			p.EnableSlots()
		}
	}
	r.direct = canRunDirect(cfg, r.inline)
	r.keeps = !r.direct || cfg.KeepsValues
	if r.inline {
		r.onOpPanic = r.opPanicked
	}
	operator.RecycleCopies(cfg.Ops)
	if len(r.OpMetrics) > 0 {
		r.OpMetrics[0].BufferLength = func() int64 {
			if !r.launched.Load() {
				return 0
			}
			return int64(len(r.in))
		}
	}
	return r
}

func (r *Rule) nowMS() int64 { return clock.NowMilli(r.cfg.Clock) }

// Start readies the rule for Send. The operator and sink goroutines start
// with the first item, or here when an operator needs to act at start
// (processing-time windows), which it does on the operator goroutine before
// the first item.
func (r *Rule) Start() {
	r.opCtx = &operator.Context{
		Env:       r.cfg.Env,
		Rule:      r.cfg.Stats,
		SendError: r.cfg.SendError,
		NowMS:     r.nowMS,
	}
	for _, op := range r.cfg.Ops {
		if _, ok := op.(operator.Starter); ok {
			r.launchOnce.Do(r.launch)
			return
		}
	}
}

// launch allocates the rule's channels and starts its goroutines. It runs
// once, under launchOnce, unless Stop came first.
func (r *Rule) launch() {
	if r.direct {
		r.directAl = r.prepareOps()
		return
	}
	r.in = make(chan *operator.Item, r.cfg.BufferLength)
	r.sinkIn = make([]chan *sinkBatch, len(r.cfg.Sinks))
	r.batchMax = min(maxSinkBatch, r.cfg.BufferLength)
	for i := range r.sinkIn {
		// BufferLength emissions, in batches.
		r.sinkIn[i] = make(chan *sinkBatch, (r.cfg.BufferLength+r.batchMax-1)/r.batchMax)
	}
	r.launched.Store(true)
	started := make(chan struct{})
	go r.runOps(started)
	<-started
	if r.inline {
		return
	}
	for i := range r.cfg.Sinks {
		r.sinksDone.Add(1)
		go r.runSink(i)
	}
}

// Send hands an item (tuples from a source) to the rule, blocking while the
// rule's input buffer is full. It returns false once the rule is stopped.
// While tracing is on, the records it samples are sent one per item, each
// with its trace.
func (r *Rule) Send(it operator.Item) bool {
	if it.Kind == operator.Data && r.cfg.Trace.On() {
		r.kept.Store(true) // traces keep records
		return r.sendSampled(it)
	}
	return r.send(it)
}

func (r *Rule) send(it operator.Item) bool {
	r.cfg.Tracker.Add(1)
	r.sendMu.RLock()
	defer r.sendMu.RUnlock()
	if r.stopped {
		r.cfg.Tracker.Done()
		return false
	}
	r.launchOnce.Do(r.launch)
	if r.direct {
		r.sendDirect(it)
		return true
	}
	p, _ := r.inItems.Get().(*operator.Item)
	if p == nil {
		p = new(operator.Item)
	}
	*p = it
	select {
	case r.in <- p:
		return true
	case <-r.quit:
		r.putIn(p)
		r.cfg.Tracker.Done()
		return false
	}
}

// takeIn copies the item out of an input cell and recycles the cell.
func (r *Rule) takeIn(p *operator.Item) operator.Item {
	it := *p
	r.putIn(p)
	return it
}

func (r *Rule) putIn(p *operator.Item) {
	*p = operator.Item{}
	r.inItems.Put(p)
}

// Stop is a soft stop: the operator goroutine processes the items already
// accepted and exits, then the sinks deliver what they were given; Stop
// waits for both. Items offered after Stop are refused.
func (r *Rule) Stop() {
	select {
	case <-r.quit:
		return
	default:
	}
	close(r.quit)
	// From here on nothing launches; a rule that never did has no
	// goroutine to wait for and no channel to drain.
	r.launchOnce.Do(func() {})
	if r.launched.Load() {
		<-r.opsDone
	}
	r.sendMu.Lock()
	r.stopped = true
	r.EndDelivery() // a direct rule's held output goes out
	for drained := false; !drained; {
		select {
		case p := <-r.in:
			r.discard(r.takeIn(p))
			r.cfg.Tracker.Done()
		default:
			drained = true
		}
	}
	r.sendMu.Unlock()
	for _, ch := range r.sinkIn {
		close(ch)
	}
	r.sinksDone.Wait()
}

type timers struct {
	r      *Rule
	target int
}

func (t timers) At(ms int64) {
	r := t.r
	d := time.Duration(ms-r.nowMS()) * time.Millisecond
	r.cfg.Clock.AfterFunc(d, func() {
		r.Send(operator.Item{Kind: operator.Tick, TS: ms, Target: t.target})
	})
}

func (r *Rule) runOps(started chan<- struct{}) {
	defer close(r.opsDone)
	al := r.prepareOps()
	close(started)
	for !r.opLoop(al) {
	}
}

// prepareOps builds the operators' contexts and emit functions and starts
// the operators that act at start; on the goroutine that will run them.
func (r *Rule) prepareOps() *aligner {
	ctxs := make([]*operator.Context, len(r.cfg.Ops))
	for i, op := range r.cfg.Ops {
		c := *r.opCtx
		c.Timers = timers{r: r, target: i}
		ctxs[i] = &c
		if s, ok := op.(operator.Starter); ok {
			if err := panics.Call("operator "+op.Name()+" start", func() { s.Start(ctxs[i]) }); err != nil {
				r.panicked(err)
				r.opsFailed = true
			}
		}
	}
	r.emits = make([]operator.Emit, len(r.cfg.Ops))
	for i := range r.cfg.Ops {
		m, next := r.OpMetrics[i], i+1
		r.emits[i] = func(out operator.Item) {
			if out.Kind == operator.Data {
				m.RecordsOut.Add(1)
			}
			r.process(ctxs, next, out)
		}
	}
	return &aligner{r: r, ctxs: ctxs, barriers: map[uint64]map[int]bool{}, blocked: map[int]bool{}}
}

// opLoop runs the operator goroutine's loop until the rule stops (true),
// or until an operator panics (false: the caller calls it again, and from
// then on items are discarded).
func (r *Rule) opLoop(al *aligner) (stopped bool) {
	defer panics.Catch("", func(e *panics.Error) {
		r.opPanicked(e)
		r.cfg.Tracker.Done()
	})
	dispatch := func(p *operator.Item) {
		it := r.takeIn(p)
		r.itemMS = r.nowMS()
		if !r.opsFailed {
			al.dispatch(it)
		} else {
			r.discard(it)
		}
		r.flushSinks()
		r.cfg.Tracker.Done()
	}
	for {
		select {
		case it := <-r.in:
			dispatch(it)
		case <-r.quit:
			// Soft stop: process what was already accepted, then exit.
			for {
				select {
				case it := <-r.in:
					dispatch(it)
				default:
					return true
				}
			}
		}
	}
}

// opPanicked handles a panic while the operators processed an item: the
// operators are failed from then on, what they emitted before goes out.
func (r *Rule) opPanicked(e *panics.Error) {
	// A panic rethrown from a connector's goroutine keeps its origin.
	where := "rule output"
	if r.curOp < len(r.cfg.Ops) {
		where = "operator " + r.cfg.Ops[r.curOp].Name()
	}
	if e.Where == "" {
		e.Where = where
	}
	r.kept.Store(true)
	if r.curOp < len(r.cfg.Ops) {
		r.OpMetrics[r.curOp].RecordException(e.Error(), r.nowMS())
	}
	r.opsFailed = true
	r.flushSinks() // what the operators emitted before the panic
	r.panicked(e)
}

// sendDirect processes it on the caller's goroutine (see Rule.direct).
func (r *Rule) sendDirect(it operator.Item) {
	r.directMu.Lock()
	defer r.directMu.Unlock()
	r.holdOutput = r.cfg.EndsDeliveries && it.Kind == operator.Data
	func() {
		defer panics.Catch("", r.onOpPanic)
		r.itemMS = r.nowMS()
		if !r.opsFailed {
			r.directAl.dispatch(it)
		} else {
			r.discard(it)
		}
		r.flushSinks()
	}()
	r.cfg.Tracker.Done()
}

// EndDelivery tells a rule that the sender handed the current delivery to
// every rule (Config.EndsDeliveries): a rule running on the sender's
// goroutine sends what its sink held back.
func (r *Rule) EndDelivery() {
	if !r.direct || !r.inlineHeld.Load() {
		return
	}
	r.directMu.Lock()
	defer r.directMu.Unlock()
	r.holdOutput = false
	if r.inlineHeld.Load() {
		r.sinkInline(nil, true)
	}
}

// DeliveryKept reports whether the rule may still hold or read anything of
// the items it was sent since the last call (stream.Consumer.Kept). Only a
// direct rule can answer false: it processes an item on the sender's
// goroutine, its sink encodes what it is given before returning
// (InlineSink), and it has no state across items (nor KeepsValues). It answers true when it
// handed rows to the tap, sampled records for tracing, or met an error or
// a panic (whose text may quote a value) since the last call. What its
// sink holds until EndDelivery is encoded bytes, not values.
func (r *Rule) DeliveryKept() bool {
	kept := r.kept.Swap(false)
	return r.keeps || kept
}

// canRunDirect reports whether a rule may run its operators on the
// goroutine that sends it items: qos 0 (no barriers, so no snapshots), one
// input, one inline sink, and only operators that neither wait, keep state
// across items nor schedule ticks (preprocess, filter, project). Rule-level
// state (analytic functions, counters) is touched by one sender at a time,
// as by the operator goroutine.
func canRunDirect(cfg Config, inline bool) bool {
	if !inline || cfg.Qos.Checkpointed() || cfg.Inputs != 1 {
		return false
	}
	for _, op := range cfg.Ops {
		switch op.(type) {
		case *operator.Preprocess, *operator.Filter, *operator.Project:
		default:
			return false
		}
		if _, ok := op.(operator.Starter); ok {
			return false
		}
		if _, ok := op.(operator.Stateful); ok {
			return false
		}
	}
	return true
}

// panicked logs a recovered panic with its stack and reports the first one
// to the rule's owner.
func (r *Rule) panicked(e *panics.Error) {
	r.cfg.Logger.Error("rule goroutine panicked", "rule", r.cfg.ID, "err", e.Error(), "stack", string(e.Stack))
	r.panicOnce.Do(func() {
		if r.cfg.OnPanic != nil {
			r.cfg.OnPanic(e)
		}
	})
}

// aligner routes items to the operator chain and aligns checkpoint barriers
// across the rule's sources. It runs on the operator goroutine.
type aligner struct {
	r        *Rule
	ctxs     []*operator.Context
	barriers map[uint64]map[int]bool // barrier id → sources that delivered it
	blocked  map[int]bool            // qos 2: sources waiting for alignment
	held     []operator.Item
}

func (a *aligner) dispatch(it operator.Item) {
	switch {
	case it.Kind == operator.Tick:
		a.r.process(a.ctxs, it.Target, it)
	case it.Kind == operator.Barrier:
		a.barrier(it)
	case a.blocked[it.Source]:
		a.held = append(a.held, it)
	default:
		a.r.process(a.ctxs, 0, it)
	}
}

func (a *aligner) barrier(it operator.Item) {
	seen := a.barriers[it.Barrier]
	if seen == nil {
		seen = map[int]bool{}
		a.barriers[it.Barrier] = seen
	}
	seen[it.Source] = true
	if len(seen) < a.r.cfg.Inputs {
		if a.r.cfg.Qos.Aligned() {
			a.blocked[it.Source] = true
		}
		return
	}
	delete(a.barriers, it.Barrier)
	a.r.snapshot(it.Barrier)
	a.r.toSinks(it)
	a.blocked = map[int]bool{}
	held := a.held
	a.held = nil
	for _, h := range held {
		a.dispatch(h)
	}
}

// snapshot captures every stateful operator and the rule-level state at a
// barrier. It runs on the operator goroutine, so nothing changes meanwhile.
func (r *Rule) snapshot(id uint64) {
	if r.cfg.OnSnapshot == nil {
		return
	}
	snap := &Snapshot{ID: id, Ops: map[string][]byte{}, State: map[string][]byte{}}
	for i, op := range r.cfg.Ops {
		s, ok := op.(operator.Stateful)
		if !ok {
			continue
		}
		b, err := s.Snapshot()
		if err != nil {
			r.OpMetrics[i].RecordException(fmt.Sprintf("snapshot for checkpoint %d: %v", id, err), r.nowMS())
			return
		}
		snap.Ops[opKey(i, op)] = b
	}
	for name, s := range r.cfg.State {
		b, err := s.Snapshot()
		if err != nil {
			r.cfg.Logger.Warn("snapshot rule state", "rule", r.cfg.ID, "state", name, "err", err)
			return
		}
		snap.State[name] = b
	}
	r.cfg.OnSnapshot(snap)
}

func opKey(i int, op operator.Operator) string { return fmt.Sprintf("%d:%s", i, op.Name()) }

// Restore loads a snapshot into the operators and rule-level state. Call it
// before Start. A snapshot whose operators do not match the plan is refused.
func (r *Rule) Restore(snap *Snapshot) error {
	for i, op := range r.cfg.Ops {
		s, ok := op.(operator.Stateful)
		if !ok {
			continue
		}
		b, ok := snap.Ops[opKey(i, op)]
		if !ok {
			return fmt.Errorf("restore rule %s: snapshot %d has no state for operator %s", r.cfg.ID, snap.ID, opKey(i, op))
		}
		if err := s.Restore(b); err != nil {
			return fmt.Errorf("restore rule %s: %w", r.cfg.ID, err)
		}
	}
	for name, s := range r.cfg.State {
		if b, ok := snap.State[name]; ok {
			if err := s.Restore(b); err != nil {
				return fmt.Errorf("restore rule %s: %w", r.cfg.ID, err)
			}
		}
	}
	return nil
}

// process runs item it through the chain from operator i on.
func (r *Rule) process(ctxs []*operator.Context, i int, it operator.Item) {
	if i >= len(r.cfg.Ops) {
		r.toSinks(it)
		return
	}
	if it.Trace != nil || (it.Kind != operator.Data && r.cfg.Trace.On()) {
		r.processTraced(ctxs, i, it)
		return
	}
	r.run(ctxs, i, it, r.emits[i])
}

// run has operator i process it, emitting through emit.
func (r *Rule) run(ctxs []*operator.Context, i int, it operator.Item, emit operator.Emit) {
	op, m := r.cfg.Ops[i], r.OpMetrics[i]
	if it.Kind == operator.Data {
		m.RecordsIn.Add(1)
	}
	var start time.Time
	timed := m.timed()
	if timed {
		start = time.Now()
	}
	r.curOp = i
	err := op.Process(ctxs[i], it, emit)
	r.curOp = i
	if timed {
		m.ProcessLatency.Store(time.Since(start).Microseconds())
	}
	m.LastInvocation.Store(r.itemMS)
	if err != nil {
		panics.Rethrow(err) // a panic a lookup source recovered on its own goroutine
		r.kept.Store(true)  // the error may refer to a value
		m.RecordException(err.Error(), r.nowMS())
		if !operator.IsReported(err) && r.cfg.SendError {
			r.toSinks(operator.Item{Kind: operator.Error, Err: err})
		}
		r.cfg.Logger.Debug("operator error", "rule", r.cfg.ID, "op", op.Name(), "err", err)
	}
}

// discard releases what an item that goes no further holds.
func (r *Rule) discard(it operator.Item) {
	if it.Slots != nil {
		it.Slots.Release()
	}
}
