package metrics

import (
	"fmt"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
)

// sampledRules serves statuses set by the test.
type sampledRules struct{ rules map[string]rulemgr.Status }

func (f *sampledRules) List() []rulemgr.Status {
	var out []rulemgr.Status
	for _, st := range f.rules {
		out = append(out, rulemgr.Status{ID: st.ID, State: st.State})
	}
	return out
}

func (f *sampledRules) Status(id string) (rulemgr.Status, error) {
	st, ok := f.rules[id]
	if !ok {
		return rulemgr.Status{}, catalog.ErrNotFound
	}
	return st, nil
}

func (f *sampledRules) set(id string, in, out, errs int64) {
	f.rules[id] = rulemgr.Status{ID: id, State: rulemgr.StateRunning, Metrics: map[string]any{
		"source_demo_0_records_in_total":  in,
		"source_demo_0_exceptions_total":  int64(0),
		"op_2_project_0_exceptions_total": errs,
		"sink_log_0_0_records_out_total":  out,
		"sink_log_0_0_last_exception":     "x",
	}}
}

func TestHistoryDeltasPerInterval(t *testing.T) {
	f := &sampledRules{rules: map[string]rulemgr.Status{}}
	vc := clock.NewVirtual(1_000_000)
	h := NewHistory(HistoryConfig{Rules: f, Clock: vc, Interval: 10 * time.Second, Points: 4})
	h.Start()
	defer h.Stop()
	f.set("a", 10, 8, 1)
	vc.AdvanceTo(1_010_000, nil)
	f.set("a", 25, 20, 1)
	f.set("b", 5, 5, 0)
	vc.AdvanceTo(1_020_000, nil)
	// a restarted: its counters start again from zero.
	f.set("a", 3, 2, 0)
	vc.AdvanceTo(1_030_000, nil)

	a, ok := h.Rule("a")
	if !ok {
		t.Fatal("rule a not sampled")
	}
	want := []Point{{1_010_000, 10, 8, 1}, {1_020_000, 15, 12, 0}, {1_030_000, 3, 2, 0}}
	if fmt.Sprint(a) != fmt.Sprint(want) {
		t.Fatalf("rule a: got %v, want %v", a, want)
	}
	b, _ := h.Rule("b")
	if want := []Point{{1_020_000, 5, 5, 0}, {1_030_000, 0, 0, 0}}; fmt.Sprint(b) != fmt.Sprint(want) {
		t.Fatalf("rule b: got %v, want %v", b, want)
	}
	node := h.Node()
	if want := []Point{{1_010_000, 10, 8, 1}, {1_020_000, 20, 17, 0}, {1_030_000, 3, 2, 0}}; fmt.Sprint(node) != fmt.Sprint(want) {
		t.Fatalf("node: got %v, want %v", node, want)
	}
}

func TestHistoryIsBounded(t *testing.T) {
	f := &sampledRules{rules: map[string]rulemgr.Status{}}
	vc := clock.NewVirtual(0)
	h := NewHistory(HistoryConfig{Rules: f, Clock: vc, Interval: time.Second, Points: 3})
	for i := range 10 {
		f.set("a", int64(i*i), 0, 0)
		vc.AdvanceTo(int64(i)*1000, nil)
		h.Sample()
	}
	a, _ := h.Rule("a")
	if len(a) != 3 || a[0].Time != 7000 || a[2].Time != 9000 || a[2].RecordsIn != 81-64 {
		t.Fatalf("got %v, want the last 3 samples (7 s to 9 s)", a)
	}
	if len(h.Node()) != 3 {
		t.Fatalf("node kept %d points, want 3", len(h.Node()))
	}
}

func TestHistoryForgetsDeletedAndStoppedCountsNothing(t *testing.T) {
	f := &sampledRules{rules: map[string]rulemgr.Status{}}
	h := NewHistory(HistoryConfig{Rules: f, Clock: clock.NewVirtual(0)})
	f.set("a", 5, 5, 0)
	h.Sample()
	f.rules["a"] = rulemgr.Status{ID: "a", State: rulemgr.StateStopped}
	h.Sample()
	a, _ := h.Rule("a")
	if len(a) != 2 || a[1].RecordsIn != 0 {
		t.Fatalf("stopped rule: got %v, want a second point of zero", a)
	}
	delete(f.rules, "a")
	h.Sample()
	if _, ok := h.Rule("a"); ok {
		t.Fatal("deleted rule still has a history")
	}
	if got := h.Node(); len(got) != 3 || got[0].RecordsIn != 5 {
		t.Fatalf("node: got %v, want the deleted rule's records kept", got)
	}
}

func TestHistoryStopEndsSampling(t *testing.T) {
	f := &sampledRules{rules: map[string]rulemgr.Status{}}
	vc := clock.NewVirtual(0)
	h := NewHistory(HistoryConfig{Rules: f, Clock: vc, Interval: time.Second})
	h.Start()
	vc.AdvanceTo(1000, nil)
	h.Stop()
	vc.AdvanceTo(5000, nil)
	if n := len(h.Node()); n != 1 {
		t.Fatalf("%d samples, want 1 (none after Stop)", n)
	}
	if vc.Pending() != 0 {
		t.Fatalf("%d timers pending after Stop", vc.Pending())
	}
}

// An idle rule keeps no ring; one that had activity keeps its ring until
// the activity has left the window, and its points stay right throughout.
func TestHistoryIdleRulesHoldNoRing(t *testing.T) {
	f := &sampledRules{rules: map[string]rulemgr.Status{}}
	vc := clock.NewVirtual(0)
	h := NewHistory(HistoryConfig{Rules: f, Clock: vc, Interval: time.Second, Points: 3})
	sample := func(sec int64) {
		vc.AdvanceTo(sec*1000, nil)
		h.Sample()
	}
	ring := func(id string) bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.byID[id].vals != nil
	}
	samples := func(what, id string, want []Point) {
		t.Helper()
		if got, want := fmt.Sprint(must(h.Rule(id))), fmt.Sprint(want); got != want {
			t.Fatalf("%s: got %s, want %s", what, got, want)
		}
	}
	f.set("idle", 0, 0, 0)
	f.set("busy", 0, 0, 0)
	sample(1)
	sample(2)
	if ring("idle") || ring("busy") {
		t.Fatal("a rule with no activity holds a ring")
	}
	f.set("busy", 4, 2, 0)
	sample(3)
	if !ring("busy") {
		t.Fatal("a rule with activity holds no ring")
	}
	samples("busy", "busy", []Point{{1000, 0, 0, 0}, {2000, 0, 0, 0}, {3000, 4, 2, 0}})
	sample(4)
	sample(5)
	if !ring("busy") {
		t.Fatal("ring dropped while its activity is still in the window")
	}
	samples("busy", "busy", []Point{{3000, 4, 2, 0}, {4000, 0, 0, 0}, {5000, 0, 0, 0}})
	sample(6)
	if ring("busy") {
		t.Fatal("ring kept after its activity left the window")
	}
	f.set("busy", 5, 2, 1)
	sample(7)
	samples("busy after idling", "busy", []Point{{5000, 0, 0, 0}, {6000, 0, 0, 0}, {7000, 1, 0, 1}})
	samples("idle", "idle", []Point{{5000, 0, 0, 0}, {6000, 0, 0, 0}, {7000, 0, 0, 0}})
}

func must(p []Point, ok bool) []Point {
	if !ok {
		panic("rule not sampled")
	}
	return p
}
