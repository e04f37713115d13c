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
		now := int64(500)
		ctx := &Context{Rule: &eval.RuleStats{}, Timers: noTimers{}, NowMS: func() int64 { return now }}
		w.Start(ctx) // first boundary at 1500
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
		send(600, 1400)
		if err := w.Process(ctx, Item{Kind: Tick, TS: 1500}, emit); err != nil {
			t.Fatal(err)
		}
		send(1499, 1600) // 1499 was read before the boundary
		if err := w.Process(ctx, Item{Kind: Tick, TS: 2500}, emit); err != nil {
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
	now := int64(500)
	ctx := &Context{Rule: &eval.RuleStats{}, Timers: noTimers{}, NowMS: func() int64 { return now }}
	rows := &Window{Spec: WindowSpec{Kind: Tumbling, Unit: 1, Size: 1000}}
	rows.Start(ctx)
	var tuples []*row.Tuple
	for _, ts := range []int64{600, 700, 800} {
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
	if err := folded.Process(ctx, Item{Kind: Tick, TS: 1500}, func(it Item) {
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
