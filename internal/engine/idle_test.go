package engine

import (
	"context"
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
)

// TestIdleRulesCostNoGoroutines runs rules through the rule manager on a
// stream that receives nothing: once they run, they hold no goroutine of
// their own (only the stream's subscription has some). A record then flows
// through every rule, and they stop and delete cleanly.
func TestIdleRulesCostNoGoroutines(t *testing.T) {
	const n = 50
	e := newTestEnv(t)
	ctx := context.Background()
	mgr := rulemgr.New(rulemgr.Config{Catalog: e.runner.Catalog, Runner: e.runner, Logger: discard()})
	base := goruntime.NumGoroutine()
	for i := range n {
		def, err := rule.ParseDef([]byte(fmt.Sprintf(`{"id":"r%d","sql":"SELECT v FROM s WHERE v > %d","actions":[{"counting":{}}]}`, i, i)), rule.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := mgr.Create(ctx, def); err != nil {
			t.Fatal(err)
		}
	}
	waitAllRunning(t, mgr, n)
	// Goroutines that ended may take a moment to leave the count.
	extra := 0
	for range 200 {
		if extra = goruntime.NumGoroutine() - base; extra < n {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if extra >= n {
		t.Fatalf("%d idle rules hold %d goroutines; want fewer than one per rule", n, extra)
	}
	e.publish(t, n)
	if msgs, _ := e.out.wait(t, n); len(msgs) != n {
		t.Fatalf("got %d results; want one per rule", len(msgs))
	}
	for i := range n {
		if err := mgr.Delete(ctx, fmt.Sprintf("r%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := mgr.Close(ctx); err != nil {
		t.Fatal(err)
	}
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
	ctx := context.Background()
	var bytesPerRule, goroutinesPerRule float64
	for b.Loop() {
		mgr := rulemgr.New(rulemgr.Config{Catalog: e.runner.Catalog, Runner: e.runner, Logger: discard()})
		g0, m0 := idleFootprint()
		for i := range idleRules {
			def, err := rule.ParseDef([]byte(fmt.Sprintf(`{"id":"r%d","sql":"SELECT v FROM s WHERE v > %d","actions":[{"nop":{}}]}`, i, i%100)), rule.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if err := mgr.Create(ctx, def); err != nil {
				b.Fatal(err)
			}
		}
		waitAllRunning(b, mgr, idleRules)
		g1, m1 := idleFootprint()
		bytesPerRule = float64(m1-m0) / idleRules
		goroutinesPerRule = float64(g1-g0) / idleRules
		for i := range idleRules {
			if err := mgr.Delete(ctx, fmt.Sprintf("r%d", i)); err != nil {
				b.Fatal(err)
			}
		}
		if err := mgr.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(bytesPerRule, "bytes/rule")
	b.ReportMetric(goroutinesPerRule, "goroutines/rule")
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
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		running := 0
		for _, s := range mgr.List() {
			if s.State == rulemgr.StateRunning {
				running++
			}
		}
		if running == n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("not all %d rules running after a minute", n)
}
