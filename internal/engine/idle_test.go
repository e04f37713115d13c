package engine

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// TestIdleRulesCostNoGoroutines runs rules through the rule manager on a
// stream that receives nothing: once they run, they hold no goroutine of
// their own (only the stream's subscription has some). A record then flows
// through every rule, and they stop and delete cleanly.
func TestIdleRulesCostNoGoroutines(t *testing.T) {
	const n = 50
	e := newTestEnv(t)
	mgr := e.newManager()
	base := goruntime.NumGoroutine()
	createFilterRules(t, mgr, n, n, "counting")
	waitAllRunning(t, mgr, n)
	// Goroutines that ended may take a moment to leave the count.
	extra := 0
	if !testwait.Poll(testwait.Limit, func() bool { extra = goruntime.NumGoroutine() - base; return extra < n }) {
		t.Fatalf("%d idle rules hold %d goroutines; want fewer than one per rule", n, extra)
	}
	e.publish(t, n)
	if msgs, _ := e.out.wait(t, n); len(msgs) != n {
		t.Fatalf("got %d results; want one per rule", len(msgs))
	}
	deleteRulesAndClose(t, mgr, n)
}

// idleRules is how many rules BenchmarkIdleRules runs at once.
const idleRules = 1000

// BenchmarkIdleRules runs idleRules rules of the rules10k shape (a filter
// and a projection, a nop action) on one memory stream that receives
// nothing, through the rule manager as the daemon does, and reports what
// each idle rule costs: live heap plus goroutine stacks in bytes, and
// goroutines.
func BenchmarkIdleRules(b *testing.B) {
	e := newTestEnv(b)
	var bytesPerRule, goroutinesPerRule float64
	for b.Loop() {
		mgr := e.newManager()
		g0, m0 := idleFootprint()
		createFilterRules(b, mgr, idleRules, 100, "nop")
		waitAllRunning(b, mgr, idleRules)
		g1, m1 := idleFootprint()
		bytesPerRule = float64(m1-m0) / idleRules
		goroutinesPerRule = float64(g1-g0) / idleRules
		deleteRulesAndClose(b, mgr, idleRules)
	}
	b.ReportMetric(bytesPerRule, "bytes/rule")
	b.ReportMetric(goroutinesPerRule, "goroutines/rule")
}

// newManager is a rule manager over the test engine, as the daemon has.
func (e *testEnv) newManager() *rulemgr.Manager {
	return rulemgr.New(rulemgr.Config{Catalog: e.runner.cfg.Catalog, Runner: e.runner, Logger: discard()})
}

// createFilterRules creates through mgr the rules r0 to r<n-1>, rule ri
// filtering s on v > i%mod and writing to an action of type action.
func createFilterRules(t testing.TB, mgr *rulemgr.Manager, n, mod int, action string) {
	t.Helper()
	for i := range n {
		def := mustParseDef(t, fmt.Sprintf(`{"id":"r%d","sql":"SELECT v FROM s WHERE v > %d","actions":[{%q:{}}]}`, i, i%mod, action))
		if err := mgr.Create(context.Background(), def); err != nil {
			t.Fatal(err)
		}
	}
}

// deleteRulesAndClose deletes the rules createFilterRules created, then
// closes mgr.
func deleteRulesAndClose(t testing.TB, mgr *rulemgr.Manager, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		if err := mgr.Delete(ctx, fmt.Sprintf("r%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := mgr.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// idleFootprint returns the goroutine count and the bytes of live heap plus
// goroutine stacks, after a full collection.
func idleFootprint() (int, uint64) {
	goruntime.GC()
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return goruntime.NumGoroutine(), ms.HeapAlloc + ms.StackInuse
}

func waitAllRunning(t testing.TB, mgr *rulemgr.Manager, n int) {
	t.Helper()
	testwait.Within(t, time.Minute, fmt.Sprintf("all %d rules to run", n), func() bool {
		running := 0
		for _, s := range mgr.List() {
			if s.State == rulemgr.StateRunning {
				running++
			}
		}
		return running == n
	})
}

// TestNotifyDone: a callback registered on a running rule is called once
// when it stops; one registered after it stopped is called at once.
func TestNotifyDone(t *testing.T) {
	e := newTestEnv(t)
	run := startRule(t, e, `{"id":"r","sql":"SELECT v FROM s","actions":[{"counting":{}}]}`)
	calls := 0
	run.NotifyDone(func() { calls++ })
	if calls != 0 {
		t.Fatal("callback called while the rule runs")
	}
	if err := run.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := run.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	late := false
	run.NotifyDone(func() { late = true })
	if calls != 1 || !late {
		t.Fatalf("callback before stop called %d times (want 1), after stop called %v (want true)", calls, late)
	}
}

// TestManagerSeesRuleStopByItself: the rule manager learns from the
// engine's callback, with no goroutine waiting, that a rule stopped by
// error (its sink panicked).
func TestManagerSeesRuleStopByItself(t *testing.T) {
	e := newTestEnv(t)
	registerPanicky(t, e)
	ctx := context.Background()
	mgr := e.newManager()
	defer mgr.Close(ctx)
	if err := mgr.Create(ctx, mustParseDef(t, `{"id":"bad","sql":"SELECT v FROM s","actions":[{"panicky":{}}]}`)); err != nil {
		t.Fatal(err)
	}
	waitAllRunning(t, mgr, 1)
	waitSubscribed(t, e.bus, 1)
	e.publish(t, 1, 2)
	var st rulemgr.Status
	// On a timeout the check below says what the status shows.
	testwait.Poll(testwait.Limit, func() bool {
		var err error
		if st, err = mgr.Status("bad"); err != nil {
			t.Fatal(err)
		}
		return st.State == rulemgr.StateStoppedByError
	})
	if st.State != rulemgr.StateStoppedByError || !strings.Contains(st.Message, "sink driver bug") {
		t.Fatalf("status %s %q; want stopped by error with the panic", st.State, st.Message)
	}
}
