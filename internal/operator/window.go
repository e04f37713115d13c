package operator

import (
	"fmt"
	"math"
	"sort"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/value"
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
	// Fold, for a tumbling window, aggregates rows as they arrive.
	Fold *Fold

	st windowState
}

// windowState is everything a window must checkpoint.
type windowState struct {
	Rows       []*row.Tuple
	Next       int64            // next boundary (time windows; processing-time sessions)
	Opened     int64            // processing time: when the first window began
	Started    bool             // event time: first window known
	First      int64            // event time: first row's time
	Pending    []int64          // sliding delay triggers
	SessStart  int64            // processing-time session start
	SessLast   int64            // processing-time session's last row (0: none open)
	CutAt      int64            // event time: the last session was cut here (0: not cut)
	Counter    int              // count window rows since last emission
	Collecting bool             // state window open
	Parts      map[string]*part // partitioned state windows
	Buckets    []*foldBucket    // folded tumbling windows, by end
}

type part struct {
	Rows       []*row.Tuple
	Collecting bool
}

func (w *Window) Name() string { return "window" }

// Start schedules the first processing-time boundary.
func (w *Window) Start(ctx *Context) {
	if w.Fold != nil && len(w.st.Rows) > 0 {
		defer w.refold(ctx)
	}
	if w.Spec.EventTime {
		return
	}
	now := ctx.NowMS()
	switch w.Spec.Kind {
	case Tumbling, Hopping:
		// A restored window keeps its boundary, even one already past: it
		// fires at once and the rows it held are not lost.
		if w.st.Next == 0 {
			w.st.Opened = now
			step := w.Spec.Size
			if w.Spec.Kind == Hopping {
				step = w.Spec.Hop
			}
			w.st.Next = AlignedEnd(now, step, w.Spec.Unit)
		}
		ctx.Timers.At(w.st.Next)
	case Sliding:
		for _, trig := range w.st.Pending {
			ctx.Timers.At(trig + w.Spec.Delay)
		}
	case Session:
		if w.st.Next == 0 {
			w.st.Next = AlignedEnd(now, w.Spec.Size, w.Spec.Unit)
		}
		ctx.Timers.At(w.st.Next)
		if w.st.SessLast != 0 {
			ctx.Timers.At(w.st.SessLast + w.Spec.Timeout)
		}
	}
}

// AlignedEnd returns the end of the first window of a rule started at now
// (processing time) or whose first event is at now (event time), placed as
// eKuiper places it: the window's size (the hop of a hopping window) in
// its own unit counts from the start of the enclosing clock unit (seconds
// from the minute, minutes from the hour, hours from the day, milliseconds
// from the second, UTC; a window of days ends that many days after now's
// day began), and the first end is the next multiple after now's position
// in that unit. So TUMBLINGWINDOW(ss, 7) first ends at second 21 of the
// minute, not at a multiple of 7 s since the epoch, and
// TUMBLINGWINDOW(ms, 700) 700 ms after now's second. Only whole units
// count: when now's position equals the size (second 20 for
// TUMBLINGWINDOW(ss, 20)), the end is the unit boundary at or before now,
// so an empty first window fires at once, as in eKuiper.
func AlignedEnd(now, size, unit int64) int64 {
	const day = 24 * 3600 * 1000
	if unit <= 0 || size%unit != 0 {
		return alignUp(now, size)
	}
	var base int64
	switch {
	case unit >= day:
		return now - floorMod(now, day) + size
	case unit >= 3600*1000:
		base = now - floorMod(now, day)
	case unit >= 60*1000:
		base = now - floorMod(now, 3600*1000)
	case unit >= 1000:
		base = now - floorMod(now, 60*1000)
	default:
		base = now - floorMod(now, 1000)
	}
	n, pos := size/unit, (now-base)/unit
	if pos > n {
		return base + n*(pos/n+1)*unit
	}
	return base + size
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
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
		if w.Fold == nil {
			w.st.Rows = append(w.st.Rows, t)
		}
		if w.Spec.EventTime && !w.st.Started {
			w.st.Started = true
			w.st.First = t.Timestamp
			step := w.Spec.Size
			if w.Spec.Kind == Hopping {
				step = w.Spec.Hop
			}
			w.st.Next = AlignedEnd(t.Timestamp, step, w.Spec.Unit)
		}
		if w.Fold != nil {
			w.fold(ctx, t)
		}
	case Sliding:
		return w.addSliding(ctx, t, emit)
	case Session:
		w.addSessionRow(ctx, t)
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
		// The first window of a rule starts when the rule did, as in
		// eKuiper: it holds no row from before.
		start := max(now-w.Spec.Size, w.st.Opened)
		err := w.emitRange(start, now, now, emit)
		w.st.Next = now + w.Spec.Size
		ctx.Timers.At(w.st.Next)
		return err
	case Hopping:
		if now != w.st.Next {
			return nil
		}
		_ = w.emitRange(now-w.Spec.Size, now, now, emit)
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
func (w *Window) emitRange(start, end, trigger int64, emit Emit) error {
	if w.Fold != nil {
		return w.emitFolded(start, end, trigger, emit)
	}
	// A processing-time tumbling window also takes rows stamped before its
	// start: they were read before the previous boundary but reached the
	// window after it fired (a source log or a busy rule delays them), and
	// no other window will take them.
	lo := start
	if w.Spec.Kind == Tumbling && !w.Spec.EventTime {
		lo = math.MinInt64
	}
	var in []row.Row
	for _, t := range w.st.Rows {
		if t.Timestamp >= lo && t.Timestamp < end {
			in = append(in, t)
		}
	}
	emit(Item{Kind: Data, Set: &row.Set{Rows: in, Window: row.Window{Start: start, End: end, Trigger: trigger}}})
	keepFrom := end
	if w.Spec.Kind == Hopping {
		keepFrom = end + w.Spec.Hop - w.Spec.Size
	}
	w.dropBefore(keepFrom)
	return nil
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
	var err error
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
			if e := w.emitRange(start, end, end, emit); e != nil && err == nil {
				err = e
			}
			if w.Spec.Kind == Hopping {
				w.st.Next += w.Spec.Hop
			} else {
				w.st.Next += w.Spec.Size
			}
		}
	case Session:
		w.sessionWatermark(wm, emit)
	case Sliding:
		w.fireSlidingDue(wm, emit)
	}
	emit(Item{Kind: Watermark, TS: wm})
	return err
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

// Snapshot versions: 1 without folded buckets, 2 with.
const windowSnapshotVersion = 2

// Snapshot encodes the window's buffered rows, pending triggers and timers.
// The bytes share nothing with the live state.
func (w *Window) Snapshot() ([]byte, error) {
	st := &w.st
	buf := []byte{windowSnapshotVersion}
	buf = row.AppendTuples(buf, st.Rows)
	pending := make([]any, len(st.Pending))
	for i, p := range st.Pending {
		pending[i] = p
	}
	buf = value.AppendValue(buf, map[string]any{
		"next": st.Next, "opened": st.Opened, "started": st.Started, "first": st.First, "pending": pending,
		"sessStart": st.SessStart, "sessLast": st.SessLast, "cutAt": st.CutAt,
		"counter": int64(st.Counter), "collecting": st.Collecting,
	})
	keys := make([]string, 0, len(st.Parts))
	for k := range st.Parts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	buf = value.AppendValue(buf, int64(len(keys)))
	for _, k := range keys {
		p := st.Parts[k]
		buf = value.AppendString(buf, k)
		buf = value.AppendValue(buf, p.Collecting)
		buf = row.AppendTuples(buf, p.Rows)
	}
	return appendBuckets(buf, st.Buckets), nil
}

// Restore loads a snapshot taken by Snapshot.
func (w *Window) Restore(data []byte) error {
	if len(data) == 0 || data[0] < 1 || data[0] > windowSnapshotVersion {
		return fmt.Errorf("restore window: unsupported snapshot version")
	}
	r := value.NewReader(data[1:])
	var st windowState
	st.Rows = row.ReadTuples(r)
	m, _ := r.Value().(map[string]any)
	st.Next, _ = m["next"].(int64)
	st.Opened, _ = m["opened"].(int64)
	st.Started, _ = m["started"].(bool)
	st.First, _ = m["first"].(int64)
	for _, p := range asSlice(m["pending"]) {
		if v, ok := p.(int64); ok {
			st.Pending = append(st.Pending, v)
		}
	}
	st.SessStart, _ = m["sessStart"].(int64)
	st.SessLast, _ = m["sessLast"].(int64)
	st.CutAt, _ = m["cutAt"].(int64)
	counter, _ := m["counter"].(int64)
	st.Counter = int(counter)
	st.Collecting, _ = m["collecting"].(bool)
	n, _ := r.Value().(int64)
	for i := int64(0); i < n && r.Err() == nil; i++ {
		if st.Parts == nil {
			st.Parts = map[string]*part{}
		}
		k := r.String()
		p := &part{}
		p.Collecting, _ = r.Value().(bool)
		p.Rows = row.ReadTuples(r)
		st.Parts[k] = p
	}
	if data[0] >= 2 {
		bs, err := w.Fold.readBuckets(r)
		if err != nil {
			return fmt.Errorf("restore window: %w", err)
		}
		st.Buckets = bs
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("restore window: %w", err)
	}
	w.st = st
	return nil
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
