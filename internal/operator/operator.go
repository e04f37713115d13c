// Package operator holds the rule operators: plain state machines owned by
// one goroutine. Each processes an item (data, watermark, timer tick or
// barrier), emits items downstream, and — when stateful — snapshots and
// restores its state. Operators take no locks and read no global state.
package operator

import (
	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/tracing"
)

// ItemKind tells what an Item carries.
type ItemKind int

const (
	// Data carries Tuples (from sources), a Set (from windows and joins) or
	// Results (projected rows, one sink emission).
	Data ItemKind = iota
	// Watermark carries an event-time watermark in TS.
	Watermark
	// Tick is a timer firing for the operator at chain position Target.
	Tick
	// Barrier carries checkpoint barrier number Barrier.
	Barrier
	// Error carries a failure to forward to sinks when sendError is on.
	Error
)

// Item is the unit that flows between operators.
type Item struct {
	Kind    ItemKind
	Input   int // input port: 0 for streams, one per table
	Source  int // index of the attached source that produced the item
	Tuples  []*row.Tuple
	Set     *row.Set
	Results []map[string]any
	// Slots carries projected rows in slots instead of Results, from a
	// projection whose slot output is on (Project.EnableSlots); its last
	// receiver releases it.
	Slots   *row.SlotRows
	Err     error
	TS      int64
	Target  int // chain index a Tick is for
	Barrier uint64
	// Trace is set on the data of a record sampled for tracing; the
	// runtime opens a span for it at each operator and sink. Operators
	// need not copy it: what they emit while processing a traced item
	// carries its trace.
	Trace *tracing.Ctx
}

// Emit sends an item downstream.
type Emit func(Item)

// Timers schedules ticks for the operator that owns it. A tick arrives as an
// Item{Kind: Tick, TS: at} in the operator's own goroutine.
type Timers interface {
	// At schedules a tick at ms (engine clock).
	At(ms int64)
}

// Context is what the runtime hands every operator.
type Context struct {
	Env       function.Env
	Rule      *eval.RuleStats
	Timers    Timers
	SendError bool
	// NowMS reads the engine clock in milliseconds.
	NowMS func() int64

	// scratch is the evaluation context evalCtx hands out, reused for every
	// row: each operator has its own Context and evaluates one row at a
	// time, so no allocation is needed per row.
	scratch eval.Ctx
}

// Operator processes items. Process is called from one goroutine only.
type Operator interface {
	// Name is the operator's name in metrics and topology (e.g. "project").
	Name() string
	// Process handles one item and emits zero or more items. A returned
	// error is counted in the operator's exceptions; the runtime forwards it
	// as an Error item when sendError is on.
	Process(ctx *Context, it Item, emit Emit) error
}

// Stateful operators can snapshot and restore their state. Snapshot is taken
// synchronously at a barrier: the bytes must not alias live state.
type Stateful interface {
	Snapshot() ([]byte, error)
	Restore(data []byte) error
}

// Counters is implemented by operators that count records they dropped by
// policy (late events, for example); the figures appear in rule status.
// Counters is called from the operator's own goroutine.
type Counters interface {
	Counters() map[string]int64
}

// Starter operators need to act when the rule starts (e.g. schedule the first
// processing-time window boundary).
type Starter interface {
	Start(ctx *Context)
}

// forward passes non-data items on unchanged.
func forward(it Item, emit Emit) {
	emit(it)
}

// evalCtx returns the operator's evaluation context set up for one row.
// It is valid until the next call by the same operator.
func evalCtx(ctx *Context, r row.Row) *eval.Ctx {
	ec := &ctx.scratch
	*ec = eval.Ctx{Row: r, Env: ctx.Env, Rule: ctx.Rule}
	return ec
}
