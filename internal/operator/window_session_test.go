package operator

import (
	"fmt"
	"testing"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/row"
)

// sessionRun feeds a session window and records each emission as
// "start-end:ts,ts" (times relative to t0).
type sessionRun struct {
	t   *testing.T
	w   *Window
	ctx *Context
	now int64
	out []string
}

const sessT0 = 1700000000000 // second 20 of a minute

func newSessionRun(t *testing.T, spec WindowSpec) *sessionRun {
	r := &sessionRun{t: t, w: &Window{Spec: spec}, now: sessT0}
	r.ctx = &Context{Rule: &eval.RuleStats{}, Timers: noTimers{}, NowMS: func() int64 { return r.now }}
	r.w.Start(r.ctx)
	return r
}

func (r *sessionRun) emit(it Item) {
	if it.Kind != Data || it.Set == nil {
		return
	}
	s := fmt.Sprintf("%d-%d:", it.Set.Window.Start-sessT0, it.Set.Window.End-sessT0)
	for i, x := range it.Set.Rows {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(x.(*row.Tuple).Timestamp - sessT0)
	}
	r.out = append(r.out, s)
}

func (r *sessionRun) process(it Item) {
	r.t.Helper()
	if err := r.w.Process(r.ctx, it, r.emit); err != nil {
		r.t.Fatal(err)
	}
}

// rows delivers rows stamped at t0+ts (event time: released by a
// watermark at the last of them).
func (r *sessionRun) rows(ts ...int64) {
	var tuples []*row.Tuple
	for _, x := range ts {
		tuples = append(tuples, &row.Tuple{Emitter: "s", Message: map[string]any{}, Timestamp: sessT0 + x})
	}
	r.process(Item{Kind: Data, Tuples: tuples})
	if r.w.Spec.EventTime {
		r.process(Item{Kind: Watermark, TS: sessT0 + ts[len(ts)-1]})
	}
}

func (r *sessionRun) tick(ts int64) { r.process(Item{Kind: Tick, TS: sessT0 + ts}) }

func (r *sessionRun) want(want ...string) {
	r.t.Helper()
	if fmt.Sprint(r.out) != fmt.Sprint(want) {
		r.t.Errorf("sessions %v, want %v", r.out, want)
	}
}

// TestEventTimeSession: the event-time session window closes sessions as
// eKuiper does (recorded in internal/conformance/testdata/differential/
// diff_eventtime/session_*).
func TestEventTimeSession(t *testing.T) {
	spec := WindowSpec{Kind: Session, Unit: 1000, Size: 2000, Timeout: 1000, EventTime: true}
	t.Run("gap of exactly the timeout", func(t *testing.T) {
		r := newSessionRun(t, spec)
		r.rows(100)
		r.rows(1100) // 1000 after: same session
		r.rows(2200) // 1100 after: the session ended at 2100
		r.want("100-2100:100,1100")
	})
	t.Run("cut, then a late first row", func(t *testing.T) {
		r := newSessionRun(t, spec)
		r.rows(100, 900, 1700, 2500, 3300, 3900)
		r.rows(6500) // past the boundary at 4000 and the timeout at 4900
		r.want("100-4000:100,900,1700,2500,3300,3900")
		r.rows(9000)
		// The next session starts at the cut.
		r.want("100-4000:100,900,1700,2500,3300,3900", "4000-7500:6500")
	})
	t.Run("no cut without a row past the boundary", func(t *testing.T) {
		r := newSessionRun(t, spec)
		r.rows(260, 1254, 2230, 3110, 3610, 3765)
		r.process(Item{Kind: Watermark, TS: sessT0 + 4800})
		r.want("260-4765:260,1254,2230,3110,3610,3765")
	})
	t.Run("snapshot between a cut and the next session", func(t *testing.T) {
		r := newSessionRun(t, spec)
		r.rows(100, 900, 1700, 2500, 3300, 3900, 4100)
		snap, err := r.w.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		r.w = &Window{Spec: spec}
		if err := r.w.Restore(snap); err != nil {
			t.Fatal(err)
		}
		r.rows(7000)
		r.want("100-4000:100,900,1700,2500,3300,3900", "4000-5100:4100")
	})
}

// TestProcessingTimeSession: the maximum duration's clock starts with the
// rule; a cut session goes on from the cut.
func TestProcessingTimeSession(t *testing.T) {
	spec := WindowSpec{Kind: Session, Unit: 1000, Size: 2000, Timeout: 1000}
	r := newSessionRun(t, spec) // ticks at 2000, 4000, ...
	for _, at := range []int64{300, 800, 1300, 1800} {
		r.now = sessT0 + at
		r.rows(at)
	}
	r.tick(2000) // the first row is 1700 old: no cut
	for _, at := range []int64{2300, 2800, 3300, 3800} {
		r.now = sessT0 + at
		r.rows(at)
	}
	r.tick(4000) // cut
	r.tick(4800) // the timeout, with no row left: the session stays open
	r.now = sessT0 + 6000
	r.rows(6000)
	r.tick(6000)
	r.tick(7000)
	r.want("300-4000:300,800,1300,1800,2300,2800,3300,3800", "4000-7000:6000")
}
