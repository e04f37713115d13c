package rulemgr_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/rulemgr/rulemgrtest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// failingStore fails rule state writes while fail is set, and records the
// start marker writes queued (with what observe said when each was).
type failingStore struct {
	*catalog.SQLiteStore
	mu      sync.Mutex
	fail    bool
	observe func() int
	starts  []markerTx
}

type markerTx struct {
	changes []catalog.RuleStart
	seen    int // observe() as it was queued
}

func (f *failingStore) QueueRuleStarts(node string, changes []catalog.RuleStart) *catalog.QueuedStarts {
	f.mu.Lock()
	tx := markerTx{changes: slices.Clone(changes)}
	if f.observe != nil {
		tx.seen = f.observe()
	}
	f.starts = append(f.starts, tx)
	f.mu.Unlock()
	return f.SQLiteStore.QueueRuleStarts(node, changes)
}

func (f *failingStore) SetRuleState(ctx context.Context, id string, st catalog.RuleState) (catalog.Rule, error) {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail {
		return catalog.Rule{}, errors.New("disk I/O error")
	}
	return f.SQLiteStore.SetRuleState(ctx, id, st)
}

type env struct {
	t      *testing.T
	path   string
	store  *failingStore
	cat    *catalog.Catalog
	runner *rulemgrtest.Runner
	clock  *clock.Virtual
	mgr    *rulemgr.Manager
	mu     sync.Mutex
	clean  []string
}

const t0 = int64(1_700_000_000_000) // 2023-11-14T22:13:20Z

func newEnv(t *testing.T, path string) *env {
	t.Helper()
	return newEnvAfter(t, path, "")
}

// newEnvAfter is newEnv for a boot after a crash that left report crashed
// ("" for no crash).
func newEnvAfter(t *testing.T, path, crashed string) *env {
	t.Helper()
	return newEnvWith(t, path, func(c *rulemgr.Config) { c.Crashed = crashed })
}

// newEnvWith is newEnv with the manager's configuration changed by set.
func newEnvWith(t *testing.T, path string, set func(*rulemgr.Config)) *env {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "sqliteKV.db")
	}
	ctx := context.Background()
	st, err := catalog.Open(ctx, path, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fs := &failingStore{SQLiteStore: st}
	cat, err := catalog.New(ctx, fs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.PutStream(ctx, catalog.Stream{Name: "demo", Kind: catalog.KindStream, SQL: `CREATE STREAM demo () WITH (TYPE="memory", DATASOURCE="t")`}, catalog.Upsert); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, path: path, store: fs, cat: cat, runner: rulemgrtest.New(), clock: clock.NewVirtual(t0)}
	cfg := rulemgr.Config{
		Catalog: cat, Runner: e.runner, Clock: e.clock, Rand: func() float64 { return 0.5 },
		Cleanup: func(ctx context.Context, id string) error {
			e.mu.Lock()
			e.clean = append(e.clean, id)
			e.mu.Unlock()
			return nil
		},
	}
	set(&cfg)
	fs.observe = func() int {
		n := 0
		for _, r := range cat.Rules() {
			n += e.runner.Starts(r.ID)
		}
		return n
	}
	e.mgr = rulemgr.New(cfg)
	if err := e.mgr.Load(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.mgr.Close(context.Background()) //nolint:errcheck // may be closed by the test
		st.Close()
	})
	return e
}

func (e *env) def(js string) *rule.Def {
	e.t.Helper()
	d, err := rule.ParseDef([]byte(js), rule.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) create(js string) *rule.Def {
	e.t.Helper()
	d := e.def(js)
	if err := e.mgr.Create(context.Background(), d); err != nil {
		e.t.Fatal(err)
	}
	return d
}

// marks returns the start markers in the catalog.
func (e *env) marks() map[string]time.Time {
	e.t.Helper()
	m, err := e.cat.RuleStartMarks(context.Background(), "")
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

func (e *env) status(id string) rulemgr.Status {
	e.t.Helper()
	st, err := e.mgr.Status(id)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

func (e *env) wanted(id string) catalog.RuleState {
	e.t.Helper()
	r, err := e.store.GetRule(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return r.State
}

// advanceQuietly moves the virtual clock to ms and fails the test when a
// timer fires on the way. The manager moves a rule in time only through
// its clock's timers, and a firing posts its command before AdvanceTo
// returns: none firing shows nothing was due, without waiting to see
// nothing happen.
func (e *env) advanceQuietly(ms int64, why string) {
	e.t.Helper()
	fired := 0
	e.clock.AdvanceTo(ms, func() { fired++ })
	if fired > 0 {
		e.t.Fatalf("%s: %d timers fired by %d", why, fired, ms)
	}
}

func simpleRule(id string, extra string) string {
	return fmt.Sprintf(`{"id":%q,"sql":"SELECT * FROM demo","actions":[{"log":{}}]%s}`, id, extra)
}

func TestLifecycle(t *testing.T) {
	e := newEnv(t, "")
	ctx := context.Background()
	e.create(simpleRule("r1", ""))
	steps := []struct {
		name   string
		op     func() error
		state  rulemgr.State
		wanted catalog.RuleState
		starts int
	}{
		{"created", func() error { return nil }, rulemgr.StateRunning, catalog.RuleRunning, 1},
		{"stop", func() error { return e.mgr.Stop(ctx, "r1") }, rulemgr.StateStopped, catalog.RuleStopped, 1},
		{"stop again", func() error { return e.mgr.Stop(ctx, "r1") }, rulemgr.StateStopped, catalog.RuleStopped, 1},
		{"start", func() error { return e.mgr.Start(ctx, "r1") }, rulemgr.StateRunning, catalog.RuleRunning, 2},
		{"start again is a no-op", func() error { return e.mgr.Start(ctx, "r1") }, rulemgr.StateRunning, catalog.RuleRunning, 2},
		{"restart", func() error { return e.mgr.Restart(ctx, "r1") }, rulemgr.StateRunning, catalog.RuleRunning, 3},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if err := s.op(); err != nil {
				t.Fatal(err)
			}
			st := e.status("r1")
			if st.State != s.state || e.wanted("r1") != s.wanted || e.runner.Starts("r1") != s.starts {
				t.Fatalf("state %v wanted %v starts %d; want %v %v %d", st.State, e.wanted("r1"), e.runner.Starts("r1"), s.state, s.wanted, s.starts)
			}
			if s.state == rulemgr.StateRunning && st.Metrics["source_demo_0_records_in_total"] != int64(3) {
				t.Fatalf("metrics missing: %v", st.Metrics)
			}
		})
	}
	t.Run("delete", func(t *testing.T) {
		run := e.runner.Current("r1")
		if err := e.mgr.Delete(ctx, "r1"); err != nil {
			t.Fatal(err)
		}
		if !run.Stopped() {
			t.Fatal("delete did not stop the run")
		}
		if _, err := e.mgr.Status("r1"); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("status after delete: %v", err)
		}
		if _, err := e.store.GetRule(ctx, "r1"); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("catalog after delete: %v", err)
		}
		if len(e.clean) != 1 || e.clean[0] != "r1" {
			t.Fatalf("cleanup calls %v", e.clean)
		}
		if f := e.runner.Forgotten(); len(f) != 1 || f[0] != "r1" {
			t.Fatalf("forget calls %v, want [r1] after the run stopped", f)
		}
		if err := e.mgr.Stop(ctx, "r1"); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("stop after delete: %v", err)
		}
	})
	t.Run("create existing", func(t *testing.T) {
		e.create(simpleRule("r2", ""))
		if err := e.mgr.Create(ctx, e.def(simpleRule("r2", ""))); !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("got %v, want conflict", err)
		}
	})
	t.Run("triggered false stays stopped", func(t *testing.T) {
		e.create(simpleRule("r3", `,"triggered":false`))
		if st := e.status("r3"); st.State != rulemgr.StateStopped || e.runner.Starts("r3") != 0 || e.wanted("r3") != catalog.RuleStopped {
			t.Fatalf("got %v starts %d", st.State, e.runner.Starts("r3"))
		}
	})
	t.Run("validation", func(t *testing.T) {
		err := e.mgr.Create(ctx, e.def(`{"id":"bad","sql":"SELECT * FROM nope","actions":[{"log":{}}]}`))
		if !errors.Is(err, rule.ErrInvalid) {
			t.Fatalf("unknown stream: %v", err)
		}
		err = e.mgr.Create(ctx, e.def(`{"id":"bad","sql":"SELEC x","actions":[{"log":{}}]}`))
		if !errors.Is(err, rule.ErrInvalid) {
			t.Fatalf("bad sql: %v", err)
		}
		if _, err := e.mgr.Status("bad"); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatal("invalid rule was created")
		}
	})
}

func TestStartFailureAndEnd(t *testing.T) {
	e := newEnv(t, "")
	e.runner.SetFailStart(func(d *rule.Def) error {
		if d.ID == "bad" {
			return errors.New("connect refused")
		}
		return nil
	})
	e.create(simpleRule("bad", ""))
	if st := e.status("bad"); st.State != rulemgr.StateStoppedByError || st.Message != "connect refused" || st.State.String() != "stopped by error" {
		t.Fatalf("got %v %q", st.State, st.Message)
	}
	if e.wanted("bad") != catalog.RuleRunning {
		t.Fatal("a failed start must keep wanted state running")
	}
	e.create(simpleRule("eof", ""))
	e.runner.Current("eof").Fail(nil)
	testwait.Until(t, "rule to finish", func() bool { return e.status("eof").State == rulemgr.StateStopped })
	if e.wanted("eof") != catalog.RuleStopped {
		t.Fatal("end of input must persist wanted state stopped")
	}
	e.create(simpleRule("crash", ""))
	e.runner.Current("crash").Fail(errors.New("sink exploded"))
	testwait.Until(t, "rule to fail", func() bool { return e.status("crash").State == rulemgr.StateStoppedByError })
	if st := e.status("crash"); st.Message != "sink exploded" || st.LastStop == 0 || st.LastStart == 0 {
		t.Fatalf("status %+v", st)
	}
}

func TestConcurrentCommands(t *testing.T) {
	e := newEnv(t, "")
	ctx := context.Background()
	for i := range 4 {
		e.create(simpleRule(fmt.Sprintf("r%d", i), ""))
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 40 {
				id := fmt.Sprintf("r%d", rng.IntN(4))
				var err error
				switch rng.IntN(4) {
				case 0:
					err = e.mgr.Start(ctx, id)
				case 1:
					err = e.mgr.Stop(ctx, id)
				case 2:
					err = e.mgr.Restart(ctx, id)
				case 3:
					_, err = e.mgr.Upsert(ctx, e.def(simpleRule(id, fmt.Sprintf(`,"name":"n%d"`, rng.IntN(100)))))
				}
				if err != nil {
					t.Error(err)
				}
				e.mgr.Status(id) //nolint:errcheck // exercised for races
			}
		}()
	}
	wg.Wait()
	for i := range 4 {
		id := fmt.Sprintf("r%d", i)
		st, wanted := e.status(id), e.wanted(id)
		want := rulemgr.StateStopped
		if wanted == catalog.RuleRunning {
			want = rulemgr.StateRunning
		}
		if st.State != want {
			t.Errorf("%s: state %v with wanted %v (message %q)", id, st.State, wanted, st.Message)
		}
		if run := e.runner.Current(id); run != nil && (want == rulemgr.StateRunning) == run.Stopped() {
			t.Errorf("%s: last run stopped=%v with state %v", id, run.Stopped(), st.State)
		}
	}
}

func TestRestartBackoff(t *testing.T) {
	e := newEnv(t, "")
	e.runner.SetFailStart(func(*rule.Def) error { return errors.New("broker down") })
	e.create(simpleRule("r1", `,"options":{"restartStrategy":{"attempts":4,"delay":1000,"multiplier":2,"maxDelay":"3s","jitterFactor":0.2}}`))
	// Rand is 0.5, so jitter is 0: delays 1s, 2s, 3s (capped), 3s.
	at := t0
	for i, delay := range []int64{1000, 2000, 3000, 3000} {
		st := e.status("r1")
		if st.State != rulemgr.StateStoppedByError || st.NextStart != at+delay {
			t.Fatalf("attempt %d: state %v next %d, want next %d", i, st.State, st.NextStart, at+delay)
		}
		e.advanceQuietly(at+delay-1, fmt.Sprintf("attempt %d: restart due before its delay", i))
		if got := e.runner.Starts("r1"); got != i+1 {
			t.Fatalf("attempt %d: restarted before its delay (%d starts)", i, got)
		}
		at += delay
		e.clock.AdvanceTo(at, nil)
		// The start has been counted once the runner was called; the failure
		// is recorded a moment later (state "starting" until then).
		testwait.Until(t, "restart", func() bool {
			st := e.status("r1")
			return e.runner.Starts("r1") == i+2 && st.State == rulemgr.StateStoppedByError && st.NextStart != at
		})
	}
	e.advanceQuietly(at+time.Hour.Milliseconds(), "restart due beyond attempts")
	if got := e.runner.Starts("r1"); got != 5 {
		t.Fatalf("restarted beyond attempts: %d starts", got)
	}
	if st := e.status("r1"); st.NextStart != 0 || st.Restarts != 4 {
		t.Fatalf("after attempts: %+v", st)
	}
	// A user start resets the attempt counter.
	e.runner.SetFailStart(nil)
	if err := e.mgr.Start(context.Background(), "r1"); err != nil {
		t.Fatal(err)
	}
	if st := e.status("r1"); st.State != rulemgr.StateRunning || st.Restarts != 0 {
		t.Fatalf("after start: %+v", st)
	}
}

func TestBackoffJitter(t *testing.T) {
	e := newEnv(t, "")
	e.mgr.Close(context.Background()) //nolint:errcheck // replaced below
	mgr := rulemgr.New(rulemgr.Config{Catalog: e.cat, Runner: e.runner, Clock: e.clock, Rand: func() float64 { return 0 }})
	defer mgr.Close(context.Background()) //nolint:errcheck // test end
	e.runner.SetFailStart(func(*rule.Def) error { return errors.New("down") })
	if err := mgr.Create(context.Background(), e.def(simpleRule("j", `,"options":{"restartStrategy":{"attempts":1,"delay":"10s","jitterFactor":0.5}}`))); err != nil {
		t.Fatal(err)
	}
	st, _ := mgr.Status("j")
	if st.NextStart != t0+5000 { // 10s·(1 - 0.5)
		t.Fatalf("next start %d, want %d", st.NextStart, t0+5000)
	}
}

func TestConvergeOnLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sqliteKV.db")
	e := newEnv(t, path)
	ctx := context.Background()
	e.create(simpleRule("running", ""))
	e.create(simpleRule("created-stopped", `,"triggered":false`))
	e.create(simpleRule("stopped-later", ""))
	if err := e.mgr.Stop(ctx, "stopped-later"); err != nil {
		t.Fatal(err)
	}
	e.create(simpleRule("started-later", `,"triggered":false`))
	if err := e.mgr.Start(ctx, "started-later"); err != nil {
		t.Fatal(err)
	}
	if err := e.mgr.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if e.wanted("running") != catalog.RuleRunning {
		t.Fatal("close changed a wanted state")
	}
	e.store.Close()

	e2 := newEnv(t, path)
	want := map[string]rulemgr.State{
		"running": rulemgr.StateRunning, "created-stopped": rulemgr.StateStopped,
		"stopped-later": rulemgr.StateStopped, "started-later": rulemgr.StateRunning,
	}
	for id, st := range want {
		t.Run(id, func(t *testing.T) {
			testwait.Until(t, id+" to converge", func() bool { return e2.status(id).State == st })
			starts := 0
			if st == rulemgr.StateRunning {
				starts = 1
			}
			if got := e2.runner.Starts(id); got != starts {
				t.Fatalf("%d starts after load, want %d", got, starts)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	e := newEnv(t, "")
	ctx := context.Background()
	e.create(simpleRule("r1", `,"version":"2"`))
	e.create(simpleRule("r2", `,"triggered":false,"actions":[{"mqtt":{"password":"s3cret","server":"b"}}]`))
	t.Run("running rule restarts on the new definition", func(t *testing.T) {
		old := e.runner.Current("r1")
		created, err := e.mgr.Upsert(ctx, e.def(`{"id":"r1","version":"3","sql":"SELECT a FROM demo","actions":[{"log":{}}]}`))
		if err != nil || created {
			t.Fatalf("upsert: %v created=%v", err, created)
		}
		if !old.Stopped() || e.runner.Current("r1").SQL != "SELECT a FROM demo" || e.status("r1").State != rulemgr.StateRunning {
			t.Fatal("rule not restarted on the new definition")
		}
	})
	t.Run("older version refused", func(t *testing.T) {
		_, err := e.mgr.Upsert(ctx, e.def(`{"id":"r1","version":"10","sql":"SELECT b FROM demo","actions":[{"log":{}}]}`))
		if !errors.Is(err, rulemgr.ErrVersion) || !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("got %v", err)
		}
		if d, _ := e.mgr.Def("r1"); d.SQL != "SELECT a FROM demo" {
			t.Fatal("refused update changed the definition")
		}
	})
	t.Run("stopped rule stays stopped and keeps masked secrets", func(t *testing.T) {
		_, err := e.mgr.Upsert(ctx, e.def(`{"id":"r2","sql":"SELECT * FROM demo","actions":[{"mqtt":{"password":"******","server":"b"}}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if e.status("r2").State != rulemgr.StateStopped || e.runner.Starts("r2") != 0 {
			t.Fatal("stopped rule started by update")
		}
		d, _ := e.mgr.Def("r2")
		if d.Actions[0].Props["password"] != "s3cret" || d.Actions[0].Props["server"] != "b" {
			t.Fatalf("props %v", d.Actions[0].Props)
		}
		stored, _ := e.store.GetRule(ctx, "r2")
		if re, err := rule.ParseDef(stored.Definition, rule.Options{}); err != nil || re.Actions[0].Props["password"] != "s3cret" {
			t.Fatalf("stored definition lost the secret: %s", stored.Definition)
		}
	})
	t.Run("upsert creates", func(t *testing.T) {
		created, err := e.mgr.Upsert(ctx, e.def(simpleRule("r3", "")))
		if err != nil || !created || e.status("r3").State != rulemgr.StateRunning {
			t.Fatalf("created=%v err=%v", created, err)
		}
	})
	t.Run("tags", func(t *testing.T) {
		for _, step := range []struct {
			op   rulemgr.TagOp
			tags []string
			want []string
		}{
			{rulemgr.TagsReplace, []string{"a", "b"}, []string{"a", "b"}},
			{rulemgr.TagsAdd, []string{"b", "c"}, []string{"a", "b", "c"}},
			{rulemgr.TagsRemove, []string{"a"}, []string{"b", "c"}},
		} {
			if err := e.mgr.SetTags(ctx, "r3", step.op, step.tags); err != nil {
				t.Fatal(err)
			}
			got := e.cat.Rules(step.want...)
			if len(got) != 1 || got[0].ID != "r3" || len(got[0].Tags) != len(step.want) {
				t.Fatalf("after %v: %v", step.tags, got)
			}
		}
	})
}

func TestStorageFailureKeepsState(t *testing.T) {
	e := newEnv(t, "")
	ctx := context.Background()
	e.create(simpleRule("r1", ""))
	e.store.mu.Lock()
	e.store.fail = true
	e.store.mu.Unlock()
	if err := e.mgr.Stop(ctx, "r1"); err == nil {
		t.Fatal("stop succeeded although the catalog write failed")
	}
	if st := e.status("r1"); st.State != rulemgr.StateRunning || st.Wanted != catalog.RuleRunning {
		t.Fatalf("failed stop changed the rule: %+v", st)
	}
	e.store.mu.Lock()
	e.store.fail = false
	e.store.mu.Unlock()
	if err := e.mgr.Stop(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
}

func TestCronSchedule(t *testing.T) {
	e := newEnv(t, "")
	// t0 is 22:13:20 UTC; */5 fires at 22:15:00 (in the local zone's minutes,
	// which are the same as UTC's for whole-hour offsets).
	e.create(simpleRule("c1", `,"options":{"cron":"*/5 * * * *","duration":"1m"}`))
	st := e.status("c1")
	if st.State != rulemgr.StateScheduled || st.State.String() != "stopped: waiting for next schedule." {
		t.Fatalf("state %v", st.State)
	}
	first := st.NextStart
	if first <= t0 || first > t0+5*60*1000 {
		t.Fatalf("next start %d not within 5 minutes of %d", first, t0)
	}
	e.clock.AdvanceTo(first, nil)
	testwait.Until(t, "cron start", func() bool { return e.status("c1").State == rulemgr.StateRunning })
	e.clock.AdvanceTo(first+60_000, nil)
	testwait.Until(t, "cron stop", func() bool { return e.status("c1").State == rulemgr.StateScheduled })
	if st := e.status("c1"); st.NextStart != first+5*60*1000 || !e.runner.Current("c1").Stopped() {
		t.Fatalf("after run: next %d want %d", st.NextStart, first+5*60*1000)
	}
	if err := e.mgr.Stop(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	e.advanceQuietly(first+60*60*1000, "stopped cron rule still scheduled")
	if e.runner.Starts("c1") != 1 || e.status("c1").State != rulemgr.StateStopped {
		t.Fatal("stopped cron rule kept firing")
	}
}

// TestStartMarkerClearedOnceSettled: a rule's start marker is in the
// catalog from before its start until it ran StartSettle (5s by default),
// and is cleared when it stops.
func TestStartMarkerClearedOnceSettled(t *testing.T) {
	e := newEnv(t, "")
	ctx := context.Background()
	e.create(simpleRule("a", ""))
	e.create(simpleRule("b", ""))
	testwait.Until(t, "rules running", func() bool {
		return e.status("a").State == rulemgr.StateRunning && e.status("b").State == rulemgr.StateRunning
	})
	if m := e.marks(); len(m) != 2 {
		t.Fatalf("markers of freshly started rules = %v; want a and b", m)
	}
	if err := e.mgr.Stop(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.marks()["b"]; ok {
		t.Fatal("a stopped rule kept its start marker")
	}
	e.clock.AdvanceTo(t0+5_000, nil)
	testwait.Until(t, "marker of a settled rule cleared", func() bool { return len(e.marks()) == 0 })
	if e.status("a").State != rulemgr.StateRunning {
		t.Fatalf("a: %+v", e.status("a"))
	}
}

// TestMarkersOfOneSecondClearTogether: rules started within the same second
// clear their start markers at the same moment, the first whole second
// after they ran 5 s.
func TestMarkersOfOneSecondClearTogether(t *testing.T) {
	e := newEnv(t, "")
	e.clock.AdvanceTo(t0+100, nil)
	e.create(simpleRule("early", ""))
	e.clock.AdvanceTo(t0+900, nil)
	e.create(simpleRule("late", ""))
	e.clock.AdvanceTo(t0+5_950, nil)
	if m := e.marks(); len(m) != 2 {
		t.Fatalf("markers 5.85 s after the first start: %v; want both until the second ends", m)
	}
	e.clock.AdvanceTo(t0+6_000, nil)
	testwait.Until(t, "both markers cleared", func() bool { return len(e.marks()) == 0 })
}

// TestBootMarksRulesInOneTransaction: at boot the start markers of every
// rule that starts are written in one transaction, before any of them
// starts, replacing those left by the last run; a rule waiting for its
// schedule or wanted stopped gets none.
func TestBootMarksRulesInOneTransaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sqliteKV.db")
	e := newEnv(t, path)
	ctx := context.Background()
	const n = 30
	for i := range n {
		e.create(simpleRule(fmt.Sprintf("r%d", i), ""))
	}
	e.create(simpleRule("cron", `,"options":{"cron":"*/5 * * * *","duration":"1m"}`))
	e.create(simpleRule("idle", `,"triggered":false`))
	if err := e.mgr.Close(ctx); err != nil {
		t.Fatal(err)
	}
	e.store.Close()

	e2 := newEnv(t, path)
	testwait.Until(t, "rules running", func() bool {
		for i := range n {
			if e2.status(fmt.Sprintf("r%d", i)).State != rulemgr.StateRunning {
				return false
			}
		}
		return true
	})
	e2.store.mu.Lock()
	txs := slices.Clone(e2.store.starts)
	e2.store.mu.Unlock()
	if len(txs) != 1 {
		t.Fatalf("%d marker transactions while %d rules started at boot; want 1", len(txs), n)
	}
	if txs[0].seen != 0 {
		t.Fatalf("%d rules started before their markers were written", txs[0].seen)
	}
	marked := map[string]bool{}
	for _, c := range txs[0].changes {
		marked[c.ID] = !c.Clear
	}
	for i := range n {
		if !marked[fmt.Sprintf("r%d", i)] {
			t.Fatalf("r%d: no marker in the boot transaction %v", i, txs[0].changes)
		}
	}
	if marked["cron"] || marked["idle"] {
		t.Fatalf("a rule that does not start at boot was marked: %v", txs[0].changes)
	}
	if m := e2.marks(); len(m) != n {
		t.Fatalf("%d markers in the catalog; want %d", len(m), n)
	}
	e2.clock.AdvanceTo(t0+5_000, nil)
	testwait.Until(t, "markers of settled rules cleared", func() bool { return len(e2.marks()) == 0 })
}

// TestMarkerCommittedBeforeStart: whatever path starts a rule (create,
// boot, start after a stop), its start marker is in the catalog when the
// Runner starts it.
func TestMarkerCommittedBeforeStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sqliteKV.db")
	var mu sync.Mutex
	var starts, unmarked []string
	check := func(cat *catalog.Catalog) func(d *rule.Def) error {
		return func(d *rule.Def) error {
			m, err := cat.RuleStartMarks(context.Background(), "")
			mu.Lock()
			defer mu.Unlock()
			starts = append(starts, d.ID)
			if _, ok := m[d.ID]; !ok || err != nil {
				unmarked = append(unmarked, d.ID)
			}
			return nil
		}
	}
	ids := []string{"a", "b", "c"}
	e := newEnv(t, path)
	e.runner.SetFailStart(check(e.cat))
	for _, id := range ids {
		e.create(simpleRule(id, ""))
	}
	ctx := context.Background()
	e.clock.AdvanceTo(t0+5_000, nil) // settled: markers cleared
	if err := e.mgr.Stop(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := e.mgr.Start(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := e.mgr.Close(ctx); err != nil {
		t.Fatal(err)
	}
	e.store.Close()
	newEnvWith(t, path, func(c *rulemgr.Config) {
		c.Runner.(*rulemgrtest.Runner).SetFailStart(check(c.Catalog))
	})
	testwait.Until(t, "rules started at boot", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(starts) == 2*len(ids)+1
	})
	mu.Lock()
	defer mu.Unlock()
	if len(unmarked) != 0 {
		t.Fatalf("started without a committed start marker: %v (starts %v)", unmarked, starts)
	}
}

// TestStartMarkerLeftAtBootStopsTheRule simulates a daemon that crashed
// while a rule was starting: a marker left in the catalog and a crash
// report. At the next boot that rule is stopped with the reason, every
// other rule runs, and a user start runs it again. After a kill from
// outside (no crash report) the same marker starts the rule as usual.
func TestStartMarkerLeftAtBootStopsTheRule(t *testing.T) {
	for _, crashed := range []string{"fatal error: runtime: out of memory", ""} {
		t.Run(fmt.Sprintf("crashed=%q", crashed), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sqliteKV.db")
			e := newEnv(t, path)
			ctx := context.Background()
			e.create(simpleRule("crasher", ""))
			e.create(simpleRule("other", ""))
			e.create(simpleRule("idle", `,"triggered":false`))
			if err := e.mgr.Close(ctx); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"crasher", "deleted-meanwhile"} {
				if err := e.cat.MarkRuleStarting(ctx, "", id, time.UnixMilli(t0)); err != nil {
					t.Fatal(err)
				}
			}
			e.store.Close()

			e2 := newEnvAfter(t, path, crashed)
			testwait.Until(t, "other running", func() bool { return e2.status("other").State == rulemgr.StateRunning })
			if e2.status("idle").State != rulemgr.StateStopped {
				t.Fatalf("idle: %v", e2.status("idle").State)
			}
			if crashed == "" {
				testwait.Until(t, "crasher running after a kill", func() bool { return e2.status("crasher").State == rulemgr.StateRunning })
				return
			}
			st := e2.status("crasher")
			if st.State != rulemgr.StateStoppedByError || !strings.Contains(st.Message, "crashed (fatal error: runtime: out of memory) while this rule was starting") {
				t.Fatalf("crasher after boot: %v %q", st.State, st.Message)
			}
			if got := e2.runner.Starts("crasher"); got != 0 {
				t.Fatalf("crasher was started %d times at boot", got)
			}
			if e2.wanted("crasher") != catalog.RuleStopped {
				t.Fatal("crasher's wanted state is still running: the next boot would start it")
			}
			if m, err := e2.cat.RuleStartMarks(ctx, ""); err != nil || len(m) != 1 || m["other"].IsZero() {
				t.Fatalf("markers after boot = %v, %v; want only other's own (still settling)", m, err)
			}
			if err := e2.mgr.Start(ctx, "crasher"); err != nil {
				t.Fatal(err)
			}
			testwait.Until(t, "crasher started by hand", func() bool { return e2.status("crasher").State == rulemgr.StateRunning })
		})
	}
}

// TestStartPanicIsARuleError: a Runner whose Start panics leaves that rule
// stopped by error with the panic in its message; the manager goes on.
func TestStartPanicIsARuleError(t *testing.T) {
	e := newEnv(t, "")
	e.runner.SetFailStart(func(d *rule.Def) error {
		if d.ID == "bad" {
			var m map[string]int
			m["x"] = 1 // assignment to a nil map
		}
		return nil
	})
	e.create(simpleRule("bad", ""))
	e.create(simpleRule("good", ""))
	testwait.Until(t, "good running", func() bool { return e.status("good").State == rulemgr.StateRunning })
	st := e.status("bad")
	if st.State != rulemgr.StateStoppedByError || !strings.HasPrefix(st.Message, "panic: start rule bad: assignment to entry in nil map") {
		t.Fatalf("bad: %v %q", st.State, st.Message)
	}
}
