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
