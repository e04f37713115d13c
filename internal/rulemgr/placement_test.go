package rulemgr_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// fakePlacement holds the leases the test gives it.
type fakePlacement struct {
	mu     sync.Mutex
	held   map[string]bool
	remote map[string]string // rule → node
	kicks  int
}

func (p *fakePlacement) Holds(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held[id]
}

func (p *fakePlacement) Remote(id string) (string, catalog.RuleSummary, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, ok := p.remote[id]
	return n, catalog.RuleSummary{State: "running", LastStart: 42}, ok
}

func (p *fakePlacement) Kick() {
	p.mu.Lock()
	p.kicks++
	p.mu.Unlock()
}

func (p *fakePlacement) hold(id string, on bool) {
	p.mu.Lock()
	p.held[id] = on
	p.mu.Unlock()
}

func newPlacedEnv(t *testing.T) (*env, *fakePlacement) {
	p := &fakePlacement{held: map[string]bool{}, remote: map[string]string{}}
	return newEnvWith(t, "", func(c *rulemgr.Config) { c.Placement, c.NodeID = p, "n1" }), p
}

// TestPlacementGatesRules: with a Placement a rule wanted running runs
// only while this node holds its lease; its status on another node is the
// holder's; Unplace stops it without changing its wanted state.
func TestPlacementGatesRules(t *testing.T) {
	e, p := newPlacedEnv(t)
	ctx := context.Background()
	e.create(simpleRule("a", ""))
	if n := e.runner.Starts("a"); n != 0 || e.status("a").State != rulemgr.StateStopped {
		t.Fatalf("a rule without lease: %d starts, %v", n, e.status("a").State)
	}
	if e.wanted("a") != catalog.RuleRunning {
		t.Fatal("wanted state not stored")
	}
	p.mu.Lock()
	kicks := p.kicks
	p.remote["a"] = "n2"
	p.mu.Unlock()
	if kicks == 0 {
		t.Fatal("no placement pass asked for a rule wanted running")
	}
	if st := e.status("a"); st.Node != "n2" || st.State != rulemgr.StateRunning || st.LastStart != 42 {
		t.Fatalf("status of a rule n2 runs: %+v", st)
	}

	p.hold("a", true)
	e.mgr.Place("a")
	testwait.Until(t, "a running once placed", func() bool { return e.status("a").State == rulemgr.StateRunning })
	if st := e.status("a"); st.Node != "" || e.runner.Starts("a") != 1 {
		t.Fatalf("placed rule: %+v, %d starts", st, e.runner.Starts("a"))
	}
	if err := e.mgr.Unplace(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	p.hold("a", false)
	if !e.runner.Current("a").Stopped() || e.wanted("a") != catalog.RuleRunning {
		t.Fatal("unplaced rule still running, or its wanted state changed")
	}
	// A restart asked here while another node holds the lease changes
	// nothing here.
	if err := e.mgr.Restart(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if n := e.runner.Starts("a"); n != 1 {
		t.Fatalf("restart without the lease started the rule: %d starts", n)
	}
}

// TestAdoptOtherNodesChanges: changes another node wrote are applied
// without writing the catalog: a new rule appears, a new wanted state
// starts or stops it where the lease is held, a tags-only change keeps it
// running, a new definition restarts it, and a delete removes it and its
// local data.
func TestAdoptOtherNodesChanges(t *testing.T) {
	e, p := newPlacedEnv(t)
	ctx := context.Background()
	put := func(js string, st catalog.RuleState) catalog.Rule {
		t.Helper()
		d := e.def(js)
		r, err := e.cat.PutRule(ctx, catalog.Rule{ID: d.ID, Definition: d.Raw, State: st, Tags: d.Tags}, catalog.Upsert)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := put(simpleRule("b", ""), catalog.RuleStopped)
	e.mgr.Adopt(r)
	testwait.Until(t, "b adopted", func() bool { _, err := e.mgr.Status("b"); return err == nil })
	p.hold("b", true)

	r.State = catalog.RuleRunning
	e.mgr.Adopt(r)
	testwait.Until(t, "b started", func() bool { return e.status("b").State == rulemgr.StateRunning })

	tagged := e.def(simpleRule("b", `,"tags":["x"]`))
	e.mgr.Adopt(catalog.Rule{ID: "b", Definition: tagged.Raw, State: catalog.RuleRunning, Tags: []string{"x"}})
	testwait.Until(t, "tags adopted", func() bool { d, _ := e.mgr.Def("b"); return slices.Equal(d.Tags, []string{"x"}) })
	if n := e.runner.Starts("b"); n != 1 || e.status("b").State != rulemgr.StateRunning {
		t.Fatalf("a tags-only change restarted the rule: %d starts", n)
	}

	changed := e.def(`{"id":"b","sql":"SELECT a FROM demo","actions":[{"log":{}}]}`)
	e.mgr.Adopt(catalog.Rule{ID: "b", Definition: changed.Raw, State: catalog.RuleRunning})
	testwait.Until(t, "b restarted on its new definition", func() bool { return e.runner.Starts("b") == 2 })
	if d, _ := e.mgr.Def("b"); d.SQL != "SELECT a FROM demo" {
		t.Fatalf("definition not adopted: %s", d.SQL)
	}

	e.mgr.Adopt(catalog.Rule{ID: "b", Definition: changed.Raw, State: catalog.RuleStopped})
	testwait.Until(t, "b stopped", func() bool { return e.status("b").State == rulemgr.StateStopped })

	e.mgr.AdoptDelete("b")
	testwait.Until(t, "b removed", func() bool { _, err := e.mgr.Status("b"); return errors.Is(err, catalog.ErrNotFound) })
	e.mu.Lock()
	cleaned := slices.Contains(e.clean, "b")
	e.mu.Unlock()
	if !cleaned || slices.Contains(e.runner.Forgotten(), "b") {
		t.Fatalf("after a delete elsewhere: cleaned %v, forgotten %v", cleaned, e.runner.Forgotten())
	}
	// Nothing was written: the catalog holds what put wrote.
	got, err := e.store.GetRule(ctx, "b")
	if err != nil || got.State != catalog.RuleStopped || string(got.Definition) != string(r.Definition) {
		t.Fatalf("catalog after adopting: %+v %v", got, err)
	}
}

// restartingPlacement is a fakePlacement whose rules run as tasks: it
// records the rules whose tasks a restart asked to restart.
type restartingPlacement struct {
	*fakePlacement
	mu        sync.Mutex
	restarted []string
}

func (p *restartingPlacement) RestartTasks(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.restarted = append(p.restarted, id)
}

// TestRestartReachesTasks: POST /rules/{id}/restart of a rule whose tasks
// run through the Placement restarts them, and writes the wanted state
// running (which the other nodes read, restarting theirs); stop and start
// do not ask for a task restart.
func TestRestartReachesTasks(t *testing.T) {
	p := &restartingPlacement{fakePlacement: &fakePlacement{held: map[string]bool{}, remote: map[string]string{}}}
	e := newEnvWith(t, "", func(c *rulemgr.Config) { c.Placement, c.NodeID = p, "n1" })
	ctx := context.Background()
	e.create(simpleRule("a", ""))
	for _, op := range []func(context.Context, string) error{e.mgr.Stop, e.mgr.Start} {
		if err := op(ctx, "a"); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.mgr.Stop(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := e.mgr.Restart(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	got := slices.Clone(p.restarted)
	p.mu.Unlock()
	if !slices.Equal(got, []string{"a"}) {
		t.Errorf("tasks restarted for %v, want [a] (once, by the restart)", got)
	}
	if e.wanted("a") != catalog.RuleRunning {
		t.Error("restart did not write the wanted state running")
	}
}
