package conformance

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rekuiper/rekuiper/internal/engine"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/planner"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
)

// foldPairs are queries a tumbling window folds as rows arrive, each with a
// twin that must keep its rows (collect has no accumulator) and otherwise
// computes the same columns.
var foldPairs = []struct{ fold, rows string }{
	{
		fold: "SELECT dev, count(*) AS c, count(v) AS cv, sum(v) AS s, avg(v) AS a, min(v) AS mn, max(v) AS mx, window_start() AS ws, window_end() AS we FROM s GROUP BY dev, TUMBLINGWINDOW(ms, 1000)",
		rows: "SELECT dev, count(*) AS c, count(v) AS cv, sum(v) AS s, avg(v) AS a, min(v) AS mn, max(v) AS mx, window_start() AS ws, window_end() AS we, collect(v) AS col FROM s GROUP BY dev, TUMBLINGWINDOW(ms, 1000)",
	},
	{
		fold: "SELECT count(*) AS c, sum(v * 2) AS s2, max(dev) AS d FROM s GROUP BY TUMBLINGWINDOW(ms, 700)",
		rows: "SELECT count(*) AS c, sum(v * 2) AS s2, max(dev) AS d, collect(v) AS col FROM s GROUP BY TUMBLINGWINDOW(ms, 700)",
	},
	{
		fold: "SELECT dev, avg(v) AS a FROM s WHERE v > 0 GROUP BY dev, TUMBLINGWINDOW(ms, 500) HAVING count(*) > 1 ORDER BY dev DESC",
		rows: "SELECT dev, avg(v) AS a, collect(v) AS col FROM s WHERE v > 0 GROUP BY dev, TUMBLINGWINDOW(ms, 500) HAVING count(*) > 1 ORDER BY dev DESC",
	},
}

// TestFoldedWindowMatchesRows replays random inputs through each pair, on
// processing and event time, and requires the folded plan to emit what the
// row-keeping plan emits; the folded plan is also checkpointed and restored
// at a random event.
func TestFoldedWindowMatchesRows(t *testing.T) {
	funcs := function.Builtins()
	rng := rand.New(rand.NewPCG(7, 11))
	for i, pair := range foldPairs {
		checkFolds(t, pair.fold, true, funcs)
		checkFolds(t, pair.rows, false, funcs)
		for trial := range 60 {
			eventTime := trial%2 == 1
			c := randomFoldCase(rng, pair.fold, eventTime)
			variant := c.Rule.Options
			want := replayOrFail(t, c, variant, funcs, -1)
			rc := *c
			rc.Rule.SQL = pair.rows
			rows := replayOrFail(t, &rc, variant, funcs, -1)
			for _, em := range rows {
				for _, r := range em {
					delete(r, "col")
				}
			}
			name := fmt.Sprintf("pair %d trial %d (event time %v)", i, trial, eventTime)
			if m, _ := Compare(AsExpected(rows), want); m != nil {
				t.Fatalf("%s: folded plan differs from the row plan: %v\ninputs %v", name, m, c.Inputs)
			}
			cut := rng.IntN(len(c.Timeline))
			got := replayOrFail(t, c, variant, funcs, cut)
			if m, _ := Compare(AsExpected(want), got); m != nil {
				t.Fatalf("%s: restore after event %d changed the folded output: %v", name, cut, m)
			}
		}
	}
}

func replayOrFail(t *testing.T, c *Case, variant map[string]any, funcs *function.Registry, cut int) [][]map[string]any {
	t.Helper()
	out, err := ReplayWithRestart(c, variant, funcs, cut)
	if err != nil {
		t.Fatalf("replay %s: %v", c.Rule.SQL, err)
	}
	return out
}

// checkFolds asserts whether the plan of sql folds its window.
func checkFolds(t *testing.T, sql string, want bool, funcs *function.Registry) {
	t.Helper()
	defs, err := engine.ParseDefs([]string{foldStream})
	if err != nil {
		t.Fatal(err)
	}
	stmt, err := parser.ParseStatement(sql)
	if err != nil {
		t.Fatal(err)
	}
	sel, ok := stmt.(*ast.SelectStmt)
	if !ok {
		t.Fatalf("%s is not a SELECT", sql)
	}
	plan, err := planner.Build(sel, defs, planner.Options{}, funcs, nil)
	if err != nil {
		t.Fatal(err)
	}
	folds := false
	for _, op := range plan.Ops {
		if w, ok := op.(*operator.Window); ok && w.Fold != nil {
			folds = true
		}
	}
	if folds != want {
		t.Fatalf("%s: folds %v, want %v", sql, folds, want)
	}
}

const foldStream = `CREATE STREAM s () WITH (DATASOURCE="s", FORMAT="json", TIMESTAMP="ts")`

// randomFoldCase makes 5 to 40 events over about 5 s: devices a, b, c or
// none, values int, float, nil and now and then a string (which the numeric
// aggregates refuse); in event time, timestamps run up to 300 ms out of order.
func randomFoldCase(rng *rand.Rand, sql string, eventTime bool) *Case {
	const start = 1_700_000_000_000
	c := &Case{Name: "fold", Suite: "fold", Streams: []string{foldStream}, StartTime: start,
		Inputs: map[string][]Event{}, Rule: RuleSpec{ID: "fold", SQL: sql, Options: map[string]any{}}}
	if eventTime {
		c.Rule.Options = map[string]any{"isEventTime": true, "lateTolerance": int64(300)}
	}
	n := 5 + rng.IntN(36)
	at := int64(start)
	for i := range n {
		at += int64(rng.IntN(250))
		data := map[string]any{"ts": at - int64(rng.IntN(300))}
		if d := rng.IntN(4); d < 3 {
			data["dev"] = string(rune('a' + d))
		}
		switch rng.IntN(10) {
		case 0:
			data["v"] = nil
		case 1, 2, 3:
			data["v"] = float64(rng.IntN(200)-50) / 4
		case 4:
			if rng.IntN(4) == 0 {
				data["v"] = "x"
				break
			}
			data["v"] = int64(rng.IntN(100))
		default:
			data["v"] = int64(rng.IntN(100) - 10)
		}
		c.Inputs["s"] = append(c.Inputs["s"], Event{Data: data})
		c.Timeline = append(c.Timeline, Step{At: at, Stream: "s", Index: i})
	}
	// A last event well after the others closes the open windows.
	c.Inputs["s"] = append(c.Inputs["s"], Event{Data: map[string]any{"ts": at + 5000, "dev": "a", "v": int64(1)}})
	c.Timeline = append(c.Timeline, Step{At: at + 5000, Stream: "s", Index: n})
	return c
}
