package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/runtime"
	"github.com/rekuiper/rekuiper/internal/tracing"
)

type rowsSink struct {
	mu   sync.Mutex
	rows []map[string]any
}

func (s *rowsSink) Name() string { return "memory_0" }
func (s *rowsSink) Collect(_ context.Context, rows []map[string]any) error {
	s.mu.Lock()
	s.rows = append(s.rows, rows...)
	s.mu.Unlock()
	return nil
}

// tracedRule builds rule sql over a schemaless stream s with a tracing
// switch and a virtual clock, and starts it.
func tracedRule(t *testing.T, sql string) (*Built, *tracing.Service, *clock.Virtual, *runtime.Tracker) {
	t.Helper()
	cfg := config.Default().OpenTelemetry
	svc, err := tracing.New(cfg, tracing.Options{Clock: clock.NewVirtual(0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Shutdown(context.Background()) }) //nolint:errcheck // test end
	defs, err := ParseDefs([]string{`CREATE STREAM s () WITH (DATASOURCE="s", FORMAT="json")`})
	if err != nil {
		t.Fatal(err)
	}
	vc, tr := clock.NewVirtual(0), runtime.NewTracker()
	built, err := Build(Spec{ID: "r1", SQL: sql, Options: rule.Options{BufferLength: 64}, Defs: defs,
		Funcs: function.Builtins(), Clock: vc, Sinks: []runtime.Sink{&rowsSink{}}, Tracker: tr, Trace: svc.Rule("r1")})
	if err != nil {
		t.Fatal(err)
	}
	built.Rule.Start()
	t.Cleanup(built.Rule.Stop)
	return built, svc, vc, tr
}

func tuples(ms ...map[string]any) []*row.Tuple {
	var ts []*row.Tuple
	for i, m := range ms {
		ts = append(ts, &row.Tuple{Emitter: "s", Message: m, Timestamp: int64(i)})
	}
	return ts
}

// chainOf follows the first child from the root: the span names and the
// data of the last span.
func chainOf(root *tracing.LocalSpan) (names []string, last *tracing.LocalSpan) {
	for sp := root; sp != nil; {
		names, last = append(names, sp.Name), sp
		if len(sp.ChildSpan) == 0 {
			break
		}
		sp = sp.ChildSpan[0]
	}
	return names, last
}

func opNames(built *Built) []string {
	var names []string
	for i, op := range built.Plan.Ops {
		names = append(names, fmt.Sprintf("%d_%s", i+1, op.Name()))
	}
	return names
}

// TestTraceFilterPath: with tracing on, every record gets its own trace: a
// span at its source, at each operator it reaches and at the sink; a
// record the WHERE drops ends at the filter. Off, nothing is recorded.
func TestTraceFilterPath(t *testing.T) {
	built, svc, _, tr := tracedRule(t, "SELECT a FROM s WHERE a > 5")
	r := built.Rule
	r.Send(operator.Item{Kind: operator.Data, Tuples: tuples(map[string]any{"a": int64(1)})})
	tr.Wait()
	if ids := svc.Store().TraceIDs("r1", 0); len(ids) != 0 {
		t.Fatalf("tracing off recorded %v", ids)
	}
	svc.Rule("r1").Enable(tracing.Always)
	r.Send(operator.Item{Kind: operator.Data, Tuples: tuples(map[string]any{"a": int64(10)}, map[string]any{"a": int64(4)})})
	tr.Wait()
	ids := svc.Store().TraceIDs("r1", 0)
	if len(ids) != 2 {
		t.Fatalf("traces %v, want one per record", ids)
	}
	ops := opNames(built)
	filter := -1
	for i, op := range built.Plan.Ops {
		if op.Name() == "filter" {
			filter = i
		}
	}
	if filter < 0 {
		t.Fatalf("plan %v has no filter", ops)
	}
	// Newest first: the dropped record, then the passing one.
	passed, _ := svc.Store().Trace(ids[1])
	names, last := chainOf(passed)
	want := append(append([]string{"s"}, ops...), "memory_0")
	if strings.Join(names, ">") != strings.Join(want, ">") {
		t.Errorf("passing record's spans %v, want %v", names, want)
	}
	if last.Attribute[tracing.DataKey] != `[{"a":10}]` || last.RuleID != "r1" {
		t.Errorf("sink span attributes %v", last.Attribute)
	}
	if passed.Attribute[tracing.DataKey] != `{"a":10}` {
		t.Errorf("source span data %v", passed.Attribute[tracing.DataKey])
	}
	dropped, _ := svc.Store().Trace(ids[0])
	names, _ = chainOf(dropped)
	if want := append([]string{"s"}, ops[:filter+1]...); strings.Join(names, ">") != strings.Join(want, ">") {
		t.Errorf("dropped record's spans %v, want %v", names, want)
	}
	svc.Rule("r1").Disable()
	r.Send(operator.Item{Kind: operator.Data, Tuples: tuples(map[string]any{"a": int64(11)})})
	tr.Wait()
	if n := len(svc.Store().TraceIDs("r1", 0)); n != 2 {
		t.Errorf("%d traces after stop, want 2", n)
	}
}

// TestTraceWindow: rows a window holds end their traces at the window; the
// window's timer starts a new trace there, linked to them, which follows
// the window's result to the sink.
func TestTraceWindow(t *testing.T) {
	built, svc, vc, tr := tracedRule(t, "SELECT count(*) AS c FROM s GROUP BY TUMBLINGWINDOW(ss, 1)")
	svc.Rule("r1").Enable(tracing.Always)
	built.Rule.Send(operator.Item{Kind: operator.Data, Tuples: tuples(map[string]any{"a": int64(1)}, map[string]any{"a": int64(2)})})
	tr.Wait()
	vc.AdvanceTo(1000, tr.Wait)
	tr.Wait()
	ids := svc.Store().TraceIDs("r1", 0)
	if len(ids) != 3 {
		t.Fatalf("traces %v, want two records and the window's", ids)
	}
	win, _ := svc.Store().Trace(ids[0])
	names, last := chainOf(win)
	if !strings.HasSuffix(win.Name, "_window") || names[len(names)-1] != "memory_0" {
		t.Errorf("window trace %v", names)
	}
	if len(win.Links) != 2 || win.Links[0].TraceID != ids[2] || win.Links[1].TraceID != ids[1] {
		t.Errorf("window links %v, want the records' traces %v", win.Links, ids[1:])
	}
	if last.Attribute[tracing.DataKey] != `[{"c":2}]` {
		t.Errorf("sink data %v", last.Attribute[tracing.DataKey])
	}
	rec, _ := svc.Store().Trace(ids[1])
	if names, _ := chainOf(rec); !strings.HasSuffix(names[len(names)-1], "_window") {
		t.Errorf("record trace %v, want it to end at the window", names)
	}
}
