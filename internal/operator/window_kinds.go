package operator

import (
	"fmt"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/value"
)

func (w *Window) cond(ctx *Context, e eval.Expr, t *row.Tuple) (bool, error) {
	v, err := e(evalCtx(ctx, t))
	if err != nil {
		return false, err
	}
	return eval.Truthy(v)
}

// addSliding buffers a row and, when it triggers, emits the rows of
// [t-size, t] at once or, with a delay, [t-size, t+delay) after the delay.
func (w *Window) addSliding(ctx *Context, t *row.Tuple, emit Emit) error {
	w.st.Rows = append(w.st.Rows, t)
	return w.triggerSliding(ctx, t, emit)
}

// addSlidingBatch handles rows released together by a watermark: all of them
// join the window before any of them triggers, so each window sees every
// released row up to its trigger time.
func (w *Window) addSlidingBatch(ctx *Context, ts []*row.Tuple, emit Emit) error {
	var in []*row.Tuple
	for _, t := range ts {
		ok, err := w.pass(ctx, t)
		if err != nil {
			return fmt.Errorf("run Window error: %w", err)
		}
		if ok {
			in = append(in, t)
			w.st.Rows = append(w.st.Rows, t)
		}
	}
	for _, t := range in {
		if err := w.triggerSliding(ctx, t, emit); err != nil {
			return err
		}
	}
	return nil
}

func (w *Window) triggerSliding(ctx *Context, t *row.Tuple, emit Emit) error {
	trigger := true
	if w.Spec.Trigger != nil {
		ok, err := w.cond(ctx, w.Spec.Trigger, t)
		if err != nil {
			return fmt.Errorf("run Window error: %w", err)
		}
		trigger = ok
	}
	if trigger {
		if w.Spec.Delay == 0 {
			w.emitSliding(t.Timestamp, emit)
		} else {
			w.st.Pending = append(w.st.Pending, t.Timestamp)
			if !w.Spec.EventTime {
				ctx.Timers.At(t.Timestamp + w.Spec.Delay)
			}
		}
		ctx.Rule.HitCount++
		ctx.Rule.HitTime = t.Timestamp
	}
	w.trimSliding(t.Timestamp)
	return nil
}

func (w *Window) emitSliding(trig int64, emit Emit) {
	start, end := trig-w.Spec.Size, trig+w.Spec.Delay
	var in []row.Row
	for _, r := range w.st.Rows {
		// [t-size, t] without delay; [t-size, t+delay) with one.
		if r.Timestamp >= start && (r.Timestamp <= trig || r.Timestamp < end) {
			in = append(in, r)
		}
	}
	emit(Item{Kind: Data, Set: &row.Set{Rows: in, Window: row.Window{Start: start, End: end, Trigger: trig}}})
}

// fireSlidingDue fires delayed sliding triggers due by now.
func (w *Window) fireSlidingDue(now int64, emit Emit) {
	kept := w.st.Pending[:0]
	for _, trig := range w.st.Pending {
		if trig+w.Spec.Delay <= now {
			w.emitSliding(trig, emit)
		} else {
			kept = append(kept, trig)
		}
	}
	w.st.Pending = kept
	w.trimSliding(now)
}

func (w *Window) trimSliding(now int64) {
	oldest := now
	for _, trig := range w.st.Pending {
		if trig < oldest {
			oldest = trig
		}
	}
	w.dropBefore(oldest - w.Spec.Size)
}

// addCount implements COUNTWINDOW(n) and COUNTWINDOW(n, step).
func (w *Window) addCount(t *row.Tuple, emit Emit) {
	w.st.Rows = append(w.st.Rows, t)
	w.st.Counter++
	n, step := w.Spec.Length, w.Spec.Step
	if step <= 0 || step == n {
		if len(w.st.Rows) >= n {
			w.emitRows(w.st.Rows, emit)
			w.st.Rows = nil
			w.st.Counter = 0
		}
		return
	}
	if len(w.st.Rows) > n {
		w.st.Rows = append([]*row.Tuple(nil), w.st.Rows[len(w.st.Rows)-n:]...)
	}
	// Every step-th row triggers, as in eKuiper: the window is emitted if
	// it holds n rows by then, and the count starts again either way.
	if w.st.Counter >= step {
		w.st.Counter = 0
		if len(w.st.Rows) >= n {
			w.emitRows(w.st.Rows, emit)
		}
	}
}

// emitRows emits a count or state window. A count window's bounds are both
// the time of its last row; a state window spans its first to last row.
func (w *Window) emitRows(ts []*row.Tuple, emit Emit) {
	in := make([]row.Row, len(ts))
	for i, t := range ts {
		in[i] = t
	}
	var win row.Window
	if len(ts) > 0 {
		last := ts[len(ts)-1].Timestamp
		win = row.Window{Start: last, End: last, Trigger: last}
		if w.Spec.Kind == State {
			win.Start = ts[0].Timestamp
		}
	}
	emit(Item{Kind: Data, Set: &row.Set{Rows: in, Window: win}})
}

// addState implements STATEWINDOW(begin, emit) and STATEWINDOW(cond).
func (w *Window) addState(ctx *Context, t *row.Tuple, emit Emit) error {
	key := ""
	if len(w.Spec.Partition) > 0 {
		var kb []byte
		for _, p := range w.Spec.Partition {
			v, err := p(evalCtx(ctx, t))
			if err != nil {
				return fmt.Errorf("run Window error: %w", err)
			}
			kb = value.AppendValue(kb, v)
		}
		key = string(kb)
	}
	if w.st.Parts == nil {
		w.st.Parts = map[string]*part{}
	}
	p, ok := w.st.Parts[key]
	if !ok {
		p = &part{}
		w.st.Parts[key] = p
	}
	if w.Spec.EmitCond != nil {
		return w.addStateBeginEmit(ctx, p, t, emit)
	}
	begin, err := w.cond(ctx, w.Spec.Begin, t)
	if err != nil {
		return fmt.Errorf("run Window error: %w", err)
	}
	if begin {
		if p.Collecting && len(p.Rows) > 0 {
			w.emitRows(p.Rows, emit)
		}
		p.Rows = []*row.Tuple{t}
		p.Collecting = true
	} else if p.Collecting {
		p.Rows = append(p.Rows, t)
	}
	return nil
}

// addStateBeginEmit is STATEWINDOW(begin, emit), as eKuiper runs it: the
// begin condition is read only while no window is open, and the row that
// opens a window does not close it; the emit condition is read on the
// rows after it (STATEWINDOW(v > 3, v > 8) over 4 .. 11 gives [4 .. 9]
// and [10, 11], not [10] and [11]).
func (w *Window) addStateBeginEmit(ctx *Context, p *part, t *row.Tuple, emit Emit) error {
	if !p.Collecting {
		begin, err := w.cond(ctx, w.Spec.Begin, t)
		if err != nil {
			return fmt.Errorf("run Window error: %w", err)
		}
		if begin {
			p.Collecting = true
			p.Rows = []*row.Tuple{t}
		}
		return nil
	}
	p.Rows = append(p.Rows, t)
	end, err := w.cond(ctx, w.Spec.EmitCond, t)
	if err != nil {
		return fmt.Errorf("run Window error: %w", err)
	}
	if end {
		w.emitRows(p.Rows, emit)
		p.Rows = nil
		p.Collecting = false
	}
	return nil
}
