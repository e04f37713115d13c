package operator

import (
	"fmt"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/row"
)

// Filter drops rows whose WHERE condition is not true. On tuples it filters
// each tuple (a failing condition emits an error for that tuple); on a set it
// filters the set's rows. Rows that pass update the rule's last-hit counters.
//
// With OverWindow (a WHERE that calls aggregates, after a window, as
// eKuiper allows) the aggregates run over all rows of the window and the
// condition is then tested row by row.
type Filter struct {
	Cond       eval.Expr
	OverWindow bool
	// NoHits leaves last_hit_count() and last_hit_time() alone: a part of
	// the WHERE run early, before a join (the whole WHERE counts them).
	NoHits bool

	one [1]*row.Tuple // reused to pass a single passing tuple on
}

func (f *Filter) Name() string { return "filter" }

// KeepsNoTuples: a filter passes tuples on and keeps none (its one-tuple
// scratch is overwritten before it is read again).
func (f *Filter) KeepsNoTuples() {}

func (f *Filter) Process(ctx *Context, it Item, emit Emit) error {
	if it.Kind != Data || it.Input > 0 {
		forward(it, emit)
		return nil
	}
	if it.Set != nil {
		kept := make([]row.Row, 0, len(it.Set.Rows))
		for _, r := range it.Set.Rows {
			var ok bool
			var err error
			if f.OverWindow {
				ok, err = f.testOverWindow(ctx, r, it.Set)
			} else {
				ok, err = f.test(ctx, r)
			}
			if err != nil {
				return err
			}
			if ok {
				kept = append(kept, r)
			}
		}
		if len(kept) == 0 {
			// A window whose rows all fail WHERE emits nothing.
			return nil
		}
		set := *it.Set
		set.Rows = kept
		it.Set = &set
		emit(it)
		return nil
	}
	var firstErr error
	for _, t := range it.Tuples {
		ok, err := f.test(ctx, t)
		if err != nil {
			emitError(ctx, fmt.Errorf("run Where error: %w", err), emit)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if ok {
			// Emit before counting the hit: the SELECT of this row reads the
			// previous last_hit_count() and last_hit_time().
			f.one[0] = t
			emit(Item{Kind: Data, Tuples: f.one[:]})
			if !f.NoHits {
				ctx.Rule.HitCount++
				ctx.Rule.HitTime = t.Timestamp
			}
		}
	}
	return reported(firstErr)
}

func (f *Filter) test(ctx *Context, r row.Row) (bool, error) {
	v, err := f.Cond(evalCtx(ctx, r))
	if err != nil {
		return false, err
	}
	return eval.Truthy(v)
}

func (f *Filter) testOverWindow(ctx *Context, r row.Row, set *row.Set) (bool, error) {
	ec := evalCtx(ctx, r)
	ec.Group = &row.Group{Rows: set.Rows}
	ec.Window, ec.HasWindow = set.Window, true
	v, err := f.Cond(ec)
	if err != nil {
		return false, fmt.Errorf("run Where error: %w", err)
	}
	return eval.Truthy(v)
}

// errReported marks an error already forwarded downstream, so the runtime
// only counts it.
type errReported struct{ err error }

func (e errReported) Error() string { return e.err.Error() }
func (e errReported) Unwrap() error { return e.err }

func reported(err error) error {
	if err == nil {
		return nil
	}
	return errReported{err}
}

// IsReported tells the runtime an operator already forwarded this error.
func IsReported(err error) bool {
	_, ok := err.(errReported)
	return ok
}

func emitError(ctx *Context, err error, emit Emit) {
	if ctx.SendError {
		emit(Item{Kind: Error, Err: err})
	}
}
