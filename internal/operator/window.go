package operator

import (
	"encoding/json"
	"fmt"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/row"
)

// WindowKind is the type of window.
type WindowKind int

const (
	Tumbling WindowKind = iota + 1
	Hopping
	Sliding
	Session
	Count
	State
)

// WindowSpec configures a window operator. Durations are in ms.
type WindowSpec struct {
	Kind     WindowKind
	Unit     int64 // ms in the window's time unit (1 for MS)
	Size     int64 // tumbling/hopping/sliding length; session max duration
	Hop      int64 // hopping interval
	Delay    int64 // sliding delay
	Timeout  int64 // session timeout
	Length   int   // count window length
	Step     int   // count window step (0: tumbling)
	Filter   eval.Expr
	Trigger  eval.Expr // OVER (WHEN ...) for sliding windows
	Begin    eval.Expr // state window begin condition
	EmitCond eval.Expr // state window emit condition (nil: single-condition form)
	// Partition splits state windows (OVER (PARTITION BY ...)).
	Partition []eval.Expr
	// EventTime windows advance on watermarks instead of timers.
	EventTime bool
}

// Window collects tuples into windows and emits a row.Set per firing.
type Window struct {
	Spec WindowSpec

	st windowState
}

// windowState is everything a window must checkpoint.
type windowState struct {
	Rows       []*row.Tuple     `json:"rows"`
	Next       int64            `json:"next"`       // next boundary (time windows)
	Started    bool             `json:"started"`    // event time: first window known
	First      int64            `json:"first"`      // event time: first row's time
	Pending    []int64          `json:"pending"`    // sliding delay triggers
	SessStart  int64            `json:"sessStart"`  // session start (0: none)
	SessLast   int64            `json:"sessLast"`   // session last row time
	CutAt      int64            `json:"cutAt"`      // session cut at max duration
	CutUntil   int64            `json:"cutUntil"`   // a row before this continues the cut session
	Counter    int              `json:"counter"`    // count window rows since last emission
	Collecting bool             `json:"collecting"` // state window open
	Parts      map[string]*part `json:"parts"`      // partitioned state windows
}

type part struct {
	Rows       []*row.Tuple `json:"rows"`
	Collecting bool         `json:"collecting"`
}

func (w *Window) Name() string { return "window" }

// Start schedules the first processing-time boundary.
func (w *Window) Start(ctx *Context) {
	if w.Spec.EventTime {
		return
	}
	now := ctx.NowMS()
	switch w.Spec.Kind {
	case Tumbling:
		w.st.Next = alignedEnd(now, w.Spec.Size, w.Spec.Unit)
		ctx.Timers.At(w.st.Next)
	case Hopping:
		w.st.Next = alignedEnd(now, w.Spec.Hop, w.Spec.Unit)
		ctx.Timers.At(w.st.Next)
	}
}

// alignedEnd returns the end of the first processing-time window after now.
// Windows align to the enclosing clock boundary of their unit: seconds
// windows to the minute, minutes to the hour, hours and days to the day
// (UTC); millisecond windows start at now.
func alignedEnd(now, size, unit int64) int64 {
	var base int64
	switch {
	case unit >= 3600*1000:
		base = now - now%(24*3600*1000)
	case unit >= 60*1000:
		base = now - now%(3600*1000)
	case unit >= 1000:
		base = now - now%(60*1000)
	default:
		return now + size
	}
	return base + size*((now-base)/size+1)
}

// alignUp returns the first multiple of size strictly after t.
func alignUp(t, size int64) int64 {
	return (t/size + 1) * size
}

func (w *Window) Process(ctx *Context, it Item, emit Emit) error {
	switch it.Kind {
	case Data:
		if it.Tuples == nil || it.Input > 0 {
			forward(it, emit)
			return nil
		}
		if w.Spec.Kind == Sliding && w.Spec.EventTime {
			return w.addSlidingBatch(ctx, it.Tuples, emit)
		}
		for _, t := range it.Tuples {
			if err := w.add(ctx, t, emit); err != nil {
				return err
			}
		}
		return nil
	case Tick:
		return w.tick(ctx, it.TS, emit)
	case Watermark:
		return w.watermark(ctx, it.TS, emit)
	}
	forward(it, emit)
	return nil
}

func (w *Window) pass(ctx *Context, t *row.Tuple) (bool, error) {
	if w.Spec.Filter == nil {
		return true, nil
	}
	v, err := w.Spec.Filter(evalCtx(ctx, t))
	if err != nil {
		return false, err
	}
	return eval.Truthy(v)
}

func (w *Window) add(ctx *Context, t *row.Tuple, emit Emit) error {
	ok, err := w.pass(ctx, t)
	if err != nil {
		return fmt.Errorf("run Window error: %w", err)
	}
	if !ok {
		return nil
	}
	switch w.Spec.Kind {
	case Tumbling, Hopping:
		w.st.Rows = append(w.st.Rows, t)
		if w.Spec.EventTime && !w.st.Started {
			w.st.Started = true
			w.st.First = t.Timestamp
			step := w.Spec.Size
			if w.Spec.Kind == Hopping {
				step = w.Spec.Hop
			}
			w.st.Next = alignUp(t.Timestamp, step)
		}
	case Sliding:
		return w.addSliding(ctx, t, emit)
	case Session:
		w.addSession(ctx, t, emit)
	case Count:
		w.addCount(t, emit)
	case State:
		return w.addState(ctx, t, emit)
	}
	return nil
}

func (w *Window) tick(ctx *Context, now int64, emit Emit) error {
	switch w.Spec.Kind {
	case Tumbling:
		if now != w.st.Next {
			return nil
		}
		w.emitRange(now-w.Spec.Size, now, now, emit)
		w.st.Next = now + w.Spec.Size
		ctx.Timers.At(w.st.Next)
	case Hopping:
		if now != w.st.Next {
			return nil
		}
		w.emitRange(now-w.Spec.Size, now, now, emit)
		w.st.Next = now + w.Spec.Hop
		ctx.Timers.At(w.st.Next)
	case Sliding:
		w.fireSlidingDue(now, emit)
	case Session:
		w.sessionTick(ctx, now, emit)
	}
	return nil
}

// emitRange emits the rows with start <= ts < end and drops rows that no
// later window can need.
func (w *Window) emitRange(start, end, trigger int64, emit Emit) {
	var in []row.Row
	for _, t := range w.st.Rows {
		if t.Timestamp >= start && t.Timestamp < end {
			in = append(in, t)
		}
	}
	emit(Item{Kind: Data, Set: &row.Set{Rows: in, Window: row.Window{Start: start, End: end, Trigger: trigger}}})
	keepFrom := end
	if w.Spec.Kind == Hopping {
		keepFrom = end + w.Spec.Hop - w.Spec.Size
	}
	w.dropBefore(keepFrom)
}

func (w *Window) dropBefore(ts int64) {
	kept := w.st.Rows[:0]
	for _, t := range w.st.Rows {
		if t.Timestamp >= ts {
			kept = append(kept, t)
		}
	}
	for i := len(kept); i < len(w.st.Rows); i++ {
		w.st.Rows[i] = nil
	}
	w.st.Rows = kept
}

func (w *Window) watermark(ctx *Context, wm int64, emit Emit) error {
	switch w.Spec.Kind {
	case Tumbling, Hopping:
		if !w.st.Started {
			break
		}
		for w.st.Next <= wm {
			end := w.st.Next
			start := end - w.Spec.Size
			if first := w.firstStart(); first > start {
				// eKuiper reports the first event-time window as starting at
				// the first event (tumbling) or one hop before it (hopping),
				// not at the aligned boundary.
				start = first
			}
			w.st.First = 0
			w.emitRange(start, end, end, emit)
			if w.Spec.Kind == Hopping {
				w.st.Next += w.Spec.Hop
			} else {
				w.st.Next += w.Spec.Size
			}
		}
	case Session:
		w.sessionTick(ctx, wm, emit)
	case Sliding:
		w.fireSlidingDue(wm, emit)
	}
	emit(Item{Kind: Watermark, TS: wm})
	return nil
}

func (w *Window) firstStart() int64 {
	if w.st.First == 0 {
		return 0
	}
	if w.Spec.Kind == Hopping {
		return w.st.First - w.Spec.Hop
	}
	return w.st.First
}

// Snapshot encodes the window's buffered rows and timers.
func (w *Window) Snapshot() ([]byte, error) {
	return json.Marshal(&w.st)
}

// Restore loads a snapshot taken by Snapshot.
func (w *Window) Restore(data []byte) error {
	var st windowState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("restore window: %w", err)
	}
	w.st = st
	return nil
}
