package cluster

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// placedSet records what a placer starts and stops.
type placedSet struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (p *placedSet) Place(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ids[id] = true
}

func (p *placedSet) Unplace(_ context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.ids, id)
	return nil
}

func (p *placedSet) Summary(id string) (catalog.RuleSummary, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return catalog.RuleSummary{State: "running"}, p.ids[id]
}

func (p *placedSet) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for id := range p.ids {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// TestSpreadPlacement: over one PostgreSQL database, every node holds the
// lease of its own copy of a spread rule besides its share of the other
// rules, which the copies do not count in; a node never takes another
// node's copy, even once that node left; each node lists the copies of
// the healthy nodes.
func TestSpreadPlacement(t *testing.T) {
	url := pgtest.Start(t).NewDatabase(t)
	ctx := context.Background()
	const lease = 1500 * time.Millisecond
	type member struct {
		placer *Placer
		rules  *placedSet
		stop   context.CancelFunc
	}
	var wg sync.WaitGroup
	nodes := map[string]*member{}
	var unsharedMu sync.Mutex
	unshared := map[string]bool{} // node/rule
	for _, id := range []string{"a", "b", "c"} {
		s, err := catalog.OpenPostgres(ctx, url, catalog.PostgresOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		m := New(Config{ID: id, Store: s, Heartbeat: lease / 6})
		p := NewPlacer(PlacerConfig{Node: id, Store: s, Members: m, LeaseTime: lease,
			Wanted: func() []string { return []string{"x", "y", rule.CopyID("s", id)} },
			Unshared: func(_ context.Context, r string) {
				unsharedMu.Lock()
				defer unsharedMu.Unlock()
				unshared[id+"/"+r] = true
			}})
		rules := &placedSet{ids: map[string]bool{}}
		rctx, stop := context.WithCancel(ctx)
		wg.Go(func() { m.Run(rctx) })
		wg.Go(func() { p.Run(rctx, rules) })
		nodes[id] = &member{placer: p, rules: rules, stop: stop}
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.stop()
		}
		wg.Wait()
	})
	all := func(ids ...string) map[string]int {
		out := map[string]int{}
		for _, id := range ids {
			for _, r := range nodes[id].rules.list() {
				out[r]++
			}
		}
		return out
	}
	testwait.Until(t, "each node runs its copy, x and y run once each on different nodes", func() bool {
		got := all("a", "b", "c")
		for _, id := range []string{"a", "b", "c"} {
			if !slices.Contains(nodes[id].rules.list(), rule.CopyID("s", id)) || len(nodes[id].rules.list()) > 2 {
				return false
			}
		}
		return got["x"] == 1 && got["y"] == 1 && len(got) == 5
	})
	testwait.Until(t, "every node told that no node runs s whole", func() bool {
		unsharedMu.Lock()
		defer unsharedMu.Unlock()
		return unshared["a/s"] && unshared["b/s"] && unshared["c/s"] && len(unshared) == 3
	})
	testwait.Until(t, "a lists the copies of the three nodes", func() bool {
		return slices.Equal(nodes["a"].placer.copies("s"), []string{"s#na", "s#nb", "s#nc"})
	})

	// c leaves (its leases given up): a and b take x or y if c had one,
	// never c's copy.
	nodes["c"].stop()
	testwait.Until(t, "a and b run x and y and their own copies only", func() bool {
		got := all("a", "b")
		return got["x"] == 1 && got["y"] == 1 && got["s#na"] == 1 && got["s#nb"] == 1 && len(got) == 4
	})
	testwait.Until(t, "c's copy is no longer listed once c is unhealthy", func() bool {
		return slices.Equal(nodes["a"].placer.copies("s"), []string{"s#na", "s#nb"})
	})
	for _, id := range []string{"a", "b"} {
		if nodes[id].placer.Holds("s#nc") {
			t.Errorf("%s holds c's copy", id)
		}
	}
}

// TestTasksSpread: a spread rule expands to this node's copy only; the copy
// runs the rule's definition for this node; another node's copy is never
// started here; the status lists one copy per healthy node; a restart
// restarts the copy.
func TestTasksSpread(t *testing.T) {
	vc := clock.NewVirtual(0)
	ts, fs, runner, raws := newTestTasks(t, vc)
	ctx := context.Background()
	fs.mu.Lock()
	fs.spread = map[string]bool{"a": true}
	fs.mu.Unlock()
	if got := ts.Expand(ctx, []string{"a", "b"}); !slices.Equal(got, []string{"a#nn1", "b"}) {
		t.Fatalf("expand: %v, want this node's copy of a and b whole", got)
	}
	started := startedDefs(runner)
	ts.Place("a#nn2") // another node's copy: not here
	ts.Place("a#nn1")
	testwait.Until(t, "the copy running", func() bool { return summary(ts, "a#nn1") == "running" })
	if runner.Starts("a#nn2") != 0 {
		t.Error("another node's copy started here")
	}
	def := started("a#nn1")
	if def.Task == nil || *def.Task != (rule.Task{Rule: "a", Node: "n1"}) || def.SQL != "SELECT 1" {
		t.Errorf("copy's definition: id %q, task %+v", def.ID, def.Task)
	}

	p := NewPlacer(PlacerConfig{Node: "n1"})
	p.healthy = []string{"n1", "n2"}
	p.remote = map[string]catalog.Lease{
		"a#nn2": {Rule: "a#nn2", Node: "n2", Live: true, Summary: catalog.RuleSummary{State: "running", LastStart: 9}},
		"a#nn3": {Rule: "a#nn3", Node: "n3", Live: true, Summary: catalog.RuleSummary{State: "running"}},
		"a#nn4": {Rule: "a#nn4", Node: "n4"}, // expired, node gone
	}
	sp := NewSplitPlacement(p, ts)
	tasks, ok := sp.Tasks("a")
	if !ok || len(tasks) != 3 {
		t.Fatalf("tasks of a: %+v, %v", tasks, ok)
	}
	for i, want := range []struct{ id, node string }{{"a#nn1", "n1"}, {"a#nn2", "n2"}, {"a#nn3", "n3"}} {
		if tasks[i].ID != want.id || tasks[i].Node != want.node || tasks[i].State != "running" || tasks[i].Partition != nil {
			t.Errorf("task %d: %+v, want %s on %s, running, no partition", i, tasks[i], want.id, want.node)
		}
	}
	if tasks[0].Metrics == nil || tasks[1].Metrics != nil {
		t.Errorf("metrics only for the local copy: %+v", tasks)
	}

	// The sessions of the rule's whole run are ended once per definition.
	var ends []string
	ts.cfg.EndSessions = func(_ context.Context, def *rule.Def) error {
		ends = append(ends, def.ID)
		return nil
	}
	ts.EndWholeSessions(ctx, "a")
	ts.EndWholeSessions(ctx, "a")
	raws["a"] = `{"v":2}`
	ts.EndWholeSessions(ctx, "a")
	if !slices.Equal(ends, []string{"a", "a"}) {
		t.Errorf("sessions ended for %v, want a once per definition (twice)", ends)
	}

	sp.RestartTasks("a")
	testwait.Until(t, "the copy restarted", func() bool { return runner.Starts("a#nn1") == 2 && summary(ts, "a#nn1") == "running" })

	// No longer spread (the stream now reads a plain topic): the copy
	// does not start again.
	fs.mu.Lock()
	fs.spread["a"] = false
	fs.mu.Unlock()
	vc.AdvanceTo(31_000, nil)
	if got := ts.Expand(ctx, []string{"a"}); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("expand once a is no longer spread: %v", got)
	}
}
