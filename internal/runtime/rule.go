// Package runtime runs a rule's operators: one goroutine owns the fused
// operator chain, one goroutine per sink delivers results, and bounded
// channels between them apply backpressure. Timers and (later) barriers
// travel in-band through the same channels as data.
package runtime

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/operator"
)

// Sink receives a rule's emissions, one call per emission, from the sink's
// own goroutine.
type Sink interface {
	Name() string
	// Collect delivers one emission's rows. An error is counted in the
	// sink's metrics; retries are the sink cache's business.
	Collect(ctx context.Context, rows []map[string]any) error
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
	// BufferLength bounds every channel of the rule (default 1024).
	BufferLength int
	// Tracker, when set, counts items in flight (virtual-clock replay).
	Tracker *Tracker
	Logger  *slog.Logger
}

// Rule is a running rule. Start it once; Stop it once.
type Rule struct {
	cfg       Config
	in        chan operator.Item
	sinkIn    []chan operator.Item
	quit      chan struct{}
	opsDone   chan struct{}
	sinksDone sync.WaitGroup
	opCtx     *operator.Context

	OpMetrics   []*Metrics
	SinkMetrics []*Metrics
}

// New prepares a rule; nothing runs until Start.
func New(cfg Config) *Rule {
	if cfg.BufferLength <= 0 {
		cfg.BufferLength = 1024
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Rule{
		cfg:     cfg,
		in:      make(chan operator.Item, cfg.BufferLength),
		quit:    make(chan struct{}),
		opsDone: make(chan struct{}),
	}
	for range cfg.Ops {
		r.OpMetrics = append(r.OpMetrics, &Metrics{})
	}
	for range cfg.Sinks {
		ch := make(chan operator.Item, cfg.BufferLength)
		r.sinkIn = append(r.sinkIn, ch)
		m := &Metrics{}
		m.BufferLength = func() int64 { return int64(len(ch)) }
		r.SinkMetrics = append(r.SinkMetrics, m)
	}
	if len(r.OpMetrics) > 0 {
		in := r.in
		r.OpMetrics[0].BufferLength = func() int64 { return int64(len(in)) }
	}
	return r
}

func (r *Rule) nowMS() int64 { return clock.NowMilli(r.cfg.Clock) }

// Start runs the operator and sink goroutines. Operators that need to act at
// start (processing-time windows) do so on the operator goroutine before the
// first item.
func (r *Rule) Start() {
	r.opCtx = &operator.Context{
		Env:       r.cfg.Env,
		Rule:      r.cfg.Stats,
		SendError: r.cfg.SendError,
		NowMS:     r.nowMS,
	}
	started := make(chan struct{})
	go r.runOps(started)
	<-started
	for i := range r.cfg.Sinks {
		r.sinksDone.Add(1)
		go r.runSink(i)
	}
}

// Send hands an item (tuples from a source) to the rule, blocking while the
// rule's input buffer is full. It returns false once the rule is stopped.
func (r *Rule) Send(it operator.Item) bool {
	r.cfg.Tracker.Add(1)
	select {
	case r.in <- it:
		return true
	case <-r.quit:
		r.cfg.Tracker.Done()
		return false
	}
}

// Stop stops the operator goroutine, then lets the sinks drain what they were
// given and waits for them.
func (r *Rule) Stop() {
	select {
	case <-r.quit:
		return
	default:
	}
	close(r.quit)
	<-r.opsDone
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
		r.cfg.Tracker.Add(1)
		select {
		case r.in <- operator.Item{Kind: operator.Tick, TS: ms, Target: t.target}:
		case <-r.quit:
			r.cfg.Tracker.Done()
		}
	})
}

func (r *Rule) runOps(started chan<- struct{}) {
	defer close(r.opsDone)
	ctxs := make([]*operator.Context, len(r.cfg.Ops))
	for i, op := range r.cfg.Ops {
		c := *r.opCtx
		c.Timers = timers{r: r, target: i}
		ctxs[i] = &c
		if s, ok := op.(operator.Starter); ok {
			s.Start(ctxs[i])
		}
	}
	close(started)
	for {
		select {
		case it := <-r.in:
			if it.Kind == operator.Tick {
				r.process(ctxs, it.Target, it)
			} else {
				r.process(ctxs, 0, it)
			}
			r.cfg.Tracker.Done()
		case <-r.quit:
			return
		}
	}
}

// process runs item it through the chain from operator i on.
func (r *Rule) process(ctxs []*operator.Context, i int, it operator.Item) {
	if i >= len(r.cfg.Ops) {
		r.toSinks(it)
		return
	}
	op, m := r.cfg.Ops[i], r.OpMetrics[i]
	if it.Kind == operator.Data {
		m.RecordsIn.Add(1)
	}
	start := time.Now()
	err := op.Process(ctxs[i], it, func(out operator.Item) {
		if out.Kind == operator.Data {
			m.RecordsOut.Add(1)
		}
		r.process(ctxs, i+1, out)
	})
	m.ProcessLatency.Store(time.Since(start).Microseconds())
	m.LastInvocation.Store(r.nowMS())
	if err != nil {
		m.RecordException(err.Error(), r.nowMS())
		if !operator.IsReported(err) && r.cfg.SendError {
			r.toSinks(operator.Item{Kind: operator.Error, Err: err})
		}
		r.cfg.Logger.Debug("operator error", "rule", r.cfg.ID, "op", op.Name(), "err", err)
	}
}

func (r *Rule) toSinks(it operator.Item) {
	if it.Kind != operator.Data && it.Kind != operator.Error {
		return
	}
	if it.Kind == operator.Data && it.Results == nil {
		return
	}
	for _, ch := range r.sinkIn {
		r.cfg.Tracker.Add(1)
		ch <- it
	}
}

func (r *Rule) runSink(i int) {
	defer r.sinksDone.Done()
	sink, m := r.cfg.Sinks[i], r.SinkMetrics[i]
	for it := range r.sinkIn[i] {
		rows := it.Results
		if it.Kind == operator.Error {
			rows = []map[string]any{{"error": it.Err.Error()}}
		}
		m.RecordsIn.Add(1)
		start := time.Now()
		if err := sink.Collect(context.Background(), rows); err != nil {
			m.RecordException(err.Error(), r.nowMS())
		} else {
			m.RecordsOut.Add(1)
		}
		m.ProcessLatency.Store(time.Since(start).Microseconds())
		m.LastInvocation.Store(r.nowMS())
		r.cfg.Tracker.Done()
	}
}
