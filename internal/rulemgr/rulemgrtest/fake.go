// Package rulemgrtest provides a fake rulemgr.Runner for tests.
package rulemgrtest

import (
	"context"
	"errors"
	"sync"

	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
)

// Runner is a fake rulemgr.Runner. Rules start instantly unless FailStart
// says otherwise; tests end runs with Run.Fail or Run.Finish. It is safe
// for concurrent use.
type Runner struct {
	mu sync.Mutex
	// FailStart, when set, returns the start error for a rule (nil starts it).
	FailStart func(def *rule.Def) error
	// FailValidate, when set, returns the validation error for a rule.
	FailValidate func(def *rule.Def) error
	starts       map[string]int
	runs         map[string]*Run
	forgotten    []string
}

var (
	_ rulemgr.Runner    = (*Runner)(nil)
	_ rulemgr.Forgetter = (*Runner)(nil)
)

// Forget implements rulemgr.Forgetter: it records the rule's id.
func (r *Runner) Forget(ctx context.Context, def *rule.Def) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.runs[def.ID]; old != nil && !old.isStopped() {
		return errors.New("fake runner: rule " + def.ID + " forgotten while running")
	}
	r.forgotten = append(r.forgotten, def.ID)
	return nil
}

// Forgotten returns the ids Forget was called with, in order.
func (r *Runner) Forgotten() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.forgotten...)
}

// New returns a fake runner that starts every rule.
func New() *Runner {
	return &Runner{starts: map[string]int{}, runs: map[string]*Run{}}
}

// Validate implements rulemgr.Runner.
func (r *Runner) Validate(ctx context.Context, def *rule.Def) error {
	r.mu.Lock()
	f := r.FailValidate
	r.mu.Unlock()
	if f != nil {
		return f(def)
	}
	return nil
}

// SetFailStart replaces FailStart safely while rules run.
func (r *Runner) SetFailStart(f func(def *rule.Def) error) {
	r.mu.Lock()
	r.FailStart = f
	r.mu.Unlock()
}

// Start implements rulemgr.Runner.
func (r *Runner) Start(ctx context.Context, def *rule.Def) (rulemgr.Running, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts[def.ID]++
	if r.FailStart != nil {
		if err := r.FailStart(def); err != nil {
			return nil, err
		}
	}
	if old := r.runs[def.ID]; old != nil && !old.isStopped() {
		return nil, errors.New("fake runner: rule " + def.ID + " started twice without a stop")
	}
	run := &Run{r: r, ID: def.ID, SQL: def.SQL, done: make(chan struct{})}
	r.runs[def.ID] = run
	return run, nil
}

// Starts returns how many times Start was called for id.
func (r *Runner) Starts(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.starts[id]
}

// Current returns the latest run of id (nil if never started).
func (r *Runner) Current(id string) *Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[id]
}

// Run is a fake running rule.
type Run struct {
	r    *Runner
	ID   string
	SQL  string
	mu   sync.Mutex
	done chan struct{}
	err  error
	stop bool
	end  bool
}

var _ rulemgr.Running = (*Run)(nil)

// Stop implements rulemgr.Running.
func (x *Run) Stop(ctx context.Context) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stop = true
	return nil
}

func (x *Run) isStopped() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.stop || x.end
}

// Stopped reports whether Stop was called.
func (x *Run) Stopped() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.stop
}

// Fail ends the run by itself with err (nil means end of input).
func (x *Run) Fail(err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.end {
		return
	}
	x.end, x.err = true, err
	close(x.done)
}

// Done implements rulemgr.Running.
func (x *Run) Done() <-chan struct{} { return x.done }

// Err implements rulemgr.Running.
func (x *Run) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.err
}

// Metrics implements rulemgr.Running.
func (x *Run) Metrics() map[string]any {
	return map[string]any{
		"source_demo_0_records_in_total":  int64(3),
		"op_2_project_0_records_in_total": int64(3),
		"sink_log_0_0_exceptions_total":   int64(1),
		"sink_log_0_0_last_exception":     "boom",
		"checkpoint_last_id":              int64(7),
	}
}

// Topo implements rulemgr.Running.
func (x *Run) Topo() map[string]any {
	return map[string]any{"sources": []any{"source_demo"}, "edges": map[string]any{"source_demo": []any{"op_2_project"}}}
}
