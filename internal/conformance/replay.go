package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/engine"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/planner"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/runtime"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// collector is the sink of a replay: it records emissions in order.
type collector struct {
	mu   sync.Mutex
	rows [][]map[string]any
}

func (c *collector) Name() string { return "collector" }

func (c *collector) Collect(_ context.Context, rows []map[string]any) error {
	c.mu.Lock()
	c.rows = append(c.rows, rows)
	c.mu.Unlock()
	return nil
}

// Replay runs case c with one option variant on a virtual clock and returns
// the emissions the rule produced (FORMAT.md §3).
func Replay(c *Case, variant map[string]any, funcs *function.Registry) ([][]map[string]any, error) {
	return replay(context.Background(), c, variant, funcs, -1, Limits{})
}

// ReplayWithRestart is Replay with a checkpoint taken after timeline step
// cut: the rule is stopped, a fresh rule is built, the checkpoint restored
// into it, and the replay goes on. A correct engine produces the same
// emissions as an uninterrupted replay. cut < 0 replays without a restart.
func ReplayWithRestart(c *Case, variant map[string]any, funcs *function.Registry, cut int) ([][]map[string]any, error) {
	return replay(context.Background(), c, variant, funcs, cut, Limits{})
}

// Limits bound a replay of a case someone else wrote (the daemon's replay
// route). A zero field is no bound.
type Limits struct {
	// MaxEmissions stops the replay once the rule has emitted more.
	MaxEmissions int
	// MaxSteps stops the replay once more records and timer firings have
	// been processed, whether or not they emitted.
	MaxSteps int
}

// ErrLimit is returned when a replay was stopped by its context or a
// limit before the end of its timeline.
var ErrLimit = errors.New("replay stopped")

// ReplayBounded is Replay that stops, with an error wrapping ErrLimit, when
// ctx ends or lim is exceeded. Both are checked between timeline steps and
// after every timer firing, so a timeline spanning years over a window of
// a millisecond stops as soon as it emits too much; the work of one record
// or one firing is not interrupted.
func ReplayBounded(ctx context.Context, c *Case, variant map[string]any, funcs *function.Registry, lim Limits) ([][]map[string]any, error) {
	return replay(ctx, c, variant, funcs, -1, lim)
}

func replay(ctx context.Context, c *Case, variant map[string]any, funcs *function.Registry, cut int, lim Limits) ([][]map[string]any, error) {
	opts, err := rule.ParseOptions(rule.Options{}, variant)
	if err != nil {
		return nil, err
	}
	defs, err := engine.ParseDefs(c.Streams)
	if err != nil {
		return nil, err
	}
	p := &replayer{c: c, opts: opts, defs: defs, funcs: funcs, ctx: ctx, lim: lim,
		clock: clock.NewVirtual(c.StartTime), tracker: runtime.NewTracker(), sink: &collector{}}
	if err := p.build(); err != nil {
		return nil, err
	}
	p.rule.Start()
	defer func() { p.rule.Stop() }()
	p.loadTables()
	for i, step := range c.Timeline {
		if err := p.deliver(step); err != nil {
			return nil, err
		}
		if i == cut {
			if err := p.restart(); err != nil {
				return nil, err
			}
		}
	}
	p.rule.Stop()
	p.sink.mu.Lock()
	defer p.sink.mu.Unlock()
	return p.sink.rows, nil
}

type replayer struct {
	c       *Case
	opts    rule.Options
	defs    map[string]*ast.CreateStreamStmt
	funcs   *function.Registry
	clock   *clock.Virtual
	tracker *runtime.Tracker
	sink    *collector
	rule    *runtime.Rule
	ports   map[string]int
	snap    *runtime.Snapshot
	ctx     context.Context
	lim     Limits
	stopped error // why the replay was stopped early
	steps   int   // records and timer firings settled
}

func (p *replayer) build() error {
	id := p.c.Rule.ID
	if id == "" {
		id = "rule_" + p.c.Name
	}
	built, err := engine.Build(engine.Spec{
		ID: id, SQL: p.c.Rule.SQL, Options: p.opts, Defs: p.defs, Funcs: p.funcs,
		Clock: p.clock, Sinks: []runtime.Sink{p.sink}, Tracker: p.tracker,
		OnSnapshot: func(s *runtime.Snapshot) { p.snap = s },
	})
	if err != nil {
		return err
	}
	p.rule = built.Rule
	p.ports = map[string]int{}
	for _, in := range built.Plan.Inputs {
		p.ports[in.Name] = in.Port
	}
	return nil
}

func (p *replayer) loadTables() {
	for name, rows := range p.c.Tables {
		tuples := make([]*row.Tuple, 0, len(rows))
		for _, data := range rows {
			m, _ := data.(map[string]any)
			t := p.tuple(name, m)
			t.Timestamp = p.c.StartTime
			tuples = append(tuples, t)
		}
		p.rule.Send(operator.Item{Kind: operator.Data, Input: p.ports[name], Tuples: tuples})
		p.tracker.Wait()
	}
}

func (p *replayer) deliver(step Step) error {
	p.clock.AdvanceTo(step.At, p.settle)
	if p.stopped != nil {
		return p.stopped
	}
	evs := p.c.Inputs[step.Stream]
	if step.Index < 0 || step.Index >= len(evs) {
		return fmt.Errorf("timeline refers to %s[%d], which does not exist", step.Stream, step.Index)
	}
	port, ok := p.ports[step.Stream]
	if !ok {
		return fmt.Errorf("timeline delivers to %s, which the rule does not read", step.Stream)
	}
	t := p.tuple(step.Stream, evs[step.Index].Data)
	t.Timestamp = step.At
	p.rule.Send(operator.Item{Kind: operator.Data, Input: port, Tuples: []*row.Tuple{t}})
	p.settle()
	return p.stopped
}

// settle waits for the work of one record or timer firing, then stops the
// rule when the context ended or the limits are exceeded: a stopped rule
// schedules no more timers, so the clock's advance ends quickly.
func (p *replayer) settle() {
	p.tracker.Wait()
	if p.stopped != nil {
		return
	}
	p.steps++
	if err := p.ctx.Err(); err != nil {
		p.stopped = fmt.Errorf("%w: %w", ErrLimit, err)
	} else if max := p.lim.MaxSteps; max > 0 && p.steps > max {
		p.stopped = fmt.Errorf("%w: more than %d records and timer firings", ErrLimit, max)
	} else if max := p.lim.MaxEmissions; max > 0 {
		p.sink.mu.Lock()
		n := len(p.sink.rows)
		p.sink.mu.Unlock()
		if n > max {
			p.stopped = fmt.Errorf("%w: the rule emitted more than %d times", ErrLimit, max)
		}
	}
	if p.stopped != nil {
		p.rule.Stop()
	}
}

// tuple makes the tuple of an input record as a JSON stream's decoder does:
// the declared fields of a typed stream in slots.
func (p *replayer) tuple(stream string, m map[string]any) *row.Tuple {
	var l *row.Layout
	if def := p.defs[stream]; def != nil {
		l = planner.Layout(def)
	}
	t := row.NewTuple(l, m)
	t.Emitter, t.Metadata = stream, p.c.InputMetadata
	return t
}

// restart checkpoints the rule through a barrier, stops it, and restores the
// checkpoint into a newly built rule.
func (p *replayer) restart() error {
	p.snap = nil
	p.rule.Send(operator.Item{Kind: operator.Barrier, Barrier: 1})
	p.tracker.Wait()
	if p.snap == nil {
		return fmt.Errorf("barrier produced no snapshot")
	}
	snap := p.snap
	p.rule.Stop()
	if err := p.build(); err != nil {
		return err
	}
	if err := p.rule.Restore(snap); err != nil {
		return err
	}
	p.rule.Start()
	return nil
}
