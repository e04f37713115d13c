package operator

import (
	"testing"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
)

type noTimers struct{}

func (noTimers) At(int64) {}

// countSite compiles count(*) into the site a folded window needs.
func countSite(t *testing.T) (*eval.AggSite, eval.Expr) {
	t.Helper()
	comp := eval.NewCompiler(function.Builtins(), map[string]string{"s": "s"}, nil)
	e, err := parser.ParseExpr("count(*)")
	if err != nil {
		t.Fatal(err)
	}
	x, err := comp.Compile(e)
	if err != nil {
		t.Fatal(err)
	}
	return comp.AggSites()[0], x
}

// TestProcessingTimeTumblingTakesLateRows: a row stamped before the last
// boundary that reaches the window only after that boundary fired (a
// source log or a busy rule delayed it) is counted in the open window,
// not dropped — kept rows and folded groups alike.
func TestProcessingTimeTumblingTakesLateRows(t *testing.T) {
	site, count := countSite(t)
	for _, folded := range []bool{false, true} {
		w := &Window{Spec: WindowSpec{Kind: Tumbling, Unit: 1, Size: 1000}}
		if folded {
			w.Fold = &Fold{Sites: []*eval.AggSite{site}}
		}
		now := int64(0)
		ctx := &Context{Rule: &eval.RuleStats{}, Timers: noTimers{}, NowMS: func() int64 { return now }}
		w.Start(ctx) // first boundary at 1000
		var sets []*row.Set
		emit := func(it Item) {
			if it.Kind == Data && it.Set != nil {
				sets = append(sets, it.Set)
			}
		}
		send := func(ts ...int64) {
			var tuples []*row.Tuple
			for _, x := range ts {
				tuples = append(tuples, &row.Tuple{Emitter: "s", Message: map[string]any{"a": x}, Timestamp: x})
			}
			if err := w.Process(ctx, Item{Kind: Data, Tuples: tuples}, emit); err != nil {
				t.Fatal(err)
			}
		}
		send(100, 900)
		if err := w.Process(ctx, Item{Kind: Tick, TS: 1000}, emit); err != nil {
			t.Fatal(err)
		}
		send(999, 1100) // 999 was read before the boundary
		if err := w.Process(ctx, Item{Kind: Tick, TS: 2000}, emit); err != nil {
			t.Fatal(err)
		}
		if len(sets) != 2 {
			t.Fatalf("folded %v: %d emissions, want 2", folded, len(sets))
		}
		var counts []int64
		for _, s := range sets {
			var n int64
			if folded {
				g := s.Groups[0]
				v, err := count(&eval.Ctx{Row: g.Rows[0], Group: g, Window: s.Window, HasWindow: true})
				if err != nil {
					t.Fatal(err)
				}
				n = v.(int64)
			} else {
				n = int64(len(s.Rows))
			}
			counts = append(counts, n)
		}
		if counts[0] != 2 || counts[1] != 2 {
			t.Errorf("folded %v: window counts %v, want [2 2]", folded, counts)
		}
	}
}

// TestFoldRestoresRowCheckpoint: a checkpoint of a window that kept its
// rows (taken before the rule folded, e.g. by an older version) restores
// into a folded window: the rows are folded when it starts and counted
// when it fires.
func TestFoldRestoresRowCheckpoint(t *testing.T) {
	site, count := countSite(t)
	now := int64(0)
	ctx := &Context{Rule: &eval.RuleStats{}, Timers: noTimers{}, NowMS: func() int64 { return now }}
	rows := &Window{Spec: WindowSpec{Kind: Tumbling, Unit: 1, Size: 1000}}
	rows.Start(ctx)
	var tuples []*row.Tuple
	for _, ts := range []int64{100, 200, 300} {
		tuples = append(tuples, &row.Tuple{Emitter: "s", Message: map[string]any{"a": ts}, Timestamp: ts})
	}
	if err := rows.Process(ctx, Item{Kind: Data, Tuples: tuples}, func(Item) {}); err != nil {
		t.Fatal(err)
	}
	snap, err := rows.Snapshot()
	if err != nil {
		t.Fatal(err)
	}

	folded := &Window{Spec: rows.Spec, Fold: &Fold{Sites: []*eval.AggSite{site}}}
	if err := folded.Restore(snap); err != nil {
		t.Fatal(err)
	}
	folded.Start(ctx)
	var got *row.Set
	if err := folded.Process(ctx, Item{Kind: Tick, TS: 1000}, func(it Item) {
		if it.Set != nil {
			got = it.Set
		}
	}); err != nil {
		t.Fatal(err)
	}
	if got == nil || len(got.Groups) != 1 {
		t.Fatalf("emission %+v, want one group", got)
	}
	g := got.Groups[0]
	v, err := count(&eval.Ctx{Row: g.Rows[0], Group: g, Window: got.Window, HasWindow: true})
	if err != nil || v != int64(3) {
		t.Fatalf("count(*) = %v, %v; want 3", v, err)
	}
}

// TestAlignedEnd: the first window ends where eKuiper puts it, counted in
// the window's unit from the enclosing clock unit (recorded in
// internal/conformance/testdata/differential/diff_eventtime: tumble7,
// tumble20, tumble_ms700, hop73, p_tumble_ms_offstart).
func TestAlignedEnd(t *testing.T) {
	const t0 = 1700000000000 // 2023-11-14 22:13:20 UTC
	for _, tt := range []struct {
		now, size, unit, want int64
	}{
		{t0 + 500, 7000, 1000, t0 + 1000},           // second 21 of the minute
		{t0 + 500, 20000, 1000, t0},                 // second 20 = size: the boundary at or before now
		{t0 + 500, 3000, 1000, t0 + 1000},           // hop 3 s: second 21
		{t0 + 500, 1000, 1000, t0 + 1000},           // second 21
		{t0 + 500, 700, 1, t0 + 700},                // ms from the second: 700
		{t0 + 250, 700, 1, t0 + 700},                // same
		{t0 + 900, 700, 1, t0 + 1400},               // 900 > 700: 1400
		{t0, 5 * 60000, 60000, t0 + 100000},         // minute 13 of the hour: 15
		{t0, 2 * 86400000, 86400000, 1700092800000}, // two days after the day began
	} {
		if got := AlignedEnd(tt.now, tt.size, tt.unit); got != tt.want {
			t.Errorf("AlignedEnd(%d, %d, %d) = %d, want %d", tt.now, tt.size, tt.unit, got, tt.want)
		}
	}
}
