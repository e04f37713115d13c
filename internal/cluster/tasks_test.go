package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr/rulemgrtest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// fakeSplits answers splits from a table and counts the questions.
type fakeSplits struct {
	mu    sync.Mutex
	parts map[string]int   // by rule id
	errs  map[string]error // by rule id
	// repart: the repartitioning stage's tasks, by rule id (none when 0)
	repart map[string]int
	// spread: the rules that run as one copy per node
	spread map[string]bool
	asked  map[string]int
}

func (f *fakeSplits) split(_ context.Context, def *rule.Def) (rule.Split, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked[def.ID]++
	if err := f.errs[def.ID]; err != nil {
		return rule.Split{}, err
	}
	if f.spread[def.ID] {
		return rule.Split{Stream: "s", Spread: true}, nil
	}
	sp := rule.Split{Stream: "s", Partitions: f.parts[def.ID], Keyed: true}
	if n := f.repart[def.ID]; n > 0 {
		sp.Repartition = &rule.Repartition{Topic: rule.RepartitionTopic(def.ID), Sources: n, SQL: "SELECT * FROM s",
			Sink: map[string]any{"topic": rule.RepartitionTopic(def.ID)}, RuleSQL: "SELECT 2"}
	}
	return sp, nil
}

func (f *fakeSplits) set(id string, parts int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.parts[id], f.errs[id] = parts, err
}

func newTestTasks(t *testing.T, vc clock.Clock) (*Tasks, *fakeSplits, *rulemgrtest.Runner, map[string]string) {
	t.Helper()
	fs := &fakeSplits{parts: map[string]int{}, errs: map[string]error{}, asked: map[string]int{}, repart: map[string]int{}}
	runner := rulemgrtest.New()
	raws := map[string]string{"a": `{"v":1}`, "b": `{"v":1}`, "c": `{"v":1}`}
	var mu sync.Mutex
	ts := NewTasks(TasksConfig{
		Node: "n1", Runner: runner, Split: fs.split, Clock: vc, Recheck: 30 * time.Second,
		Rule: func(id string) ([]byte, error) {
			mu.Lock()
			defer mu.Unlock()
			raw, ok := raws[id]
			if !ok {
				return nil, catalog.ErrNotFound
			}
			return []byte(id + raw), nil
		},
		Parse: func(raw []byte) (*rule.Def, error) {
			id, _, _ := strings.Cut(string(raw), "{")
			return &rule.Def{ID: id, SQL: "SELECT 1", Raw: raw}, nil
		},
	})
	t.Cleanup(func() { ts.Close(context.Background()) })
	return ts, fs, runner, raws
}

// startedDefs makes runner record the definition of every rule it starts;
// the returned function gives the last one started under id, nil if none.
func startedDefs(runner *rulemgrtest.Runner) func(id string) *rule.Def {
	var mu sync.Mutex
	defs := map[string]*rule.Def{}
	runner.SetFailStart(func(def *rule.Def) error {
		mu.Lock()
		defer mu.Unlock()
		defs[def.ID] = def
		return nil
	})
	return func(id string) *rule.Def {
		mu.Lock()
		defer mu.Unlock()
		return defs[id]
	}
}

func TestTasksExpand(t *testing.T) {
	vc := clock.NewVirtual(0)
	ts, fs, _, raws := newTestTasks(t, vc)
	ctx := context.Background()
	fs.set("a", 3, nil)
	fs.set("c", 0, errors.New("brokers down"))
	got := ts.Expand(ctx, []string{"a", "b", "c"})
	want := []string{"a#p0", "a#p1", "a#p2", "b"}
	if !slices.Equal(got, want) {
		t.Fatalf("expand: %v, want %v (c undecided is left out)", got, want)
	}
	// Decisions are kept until Recheck; an undecided rule is asked again.
	ts.Expand(ctx, []string{"a", "b", "c"})
	if fs.asked["a"] != 1 || fs.asked["c"] != 2 {
		t.Errorf("asked a %d times (want 1), c %d times (want 2)", fs.asked["a"], fs.asked["c"])
	}
	// The brokers failing once a rule was decided keep the decision.
	vc.AdvanceTo(31_000, nil)
	fs.set("a", 0, errors.New("brokers down"))
	fs.set("c", 2, nil)
	got = ts.Expand(ctx, []string{"a", "b", "c"})
	want = []string{"a#p0", "a#p1", "a#p2", "b", "c#p0", "c#p1"}
	if !slices.Equal(got, want) || fs.asked["a"] != 2 {
		t.Fatalf("expand after recheck: %v (asked a %d times), want %v", got, fs.asked["a"], want)
	}
	// A split never shrinks for the same definition; a new one is decided anew.
	vc.AdvanceTo(62_000, nil)
	fs.set("a", 2, nil)
	if got = ts.Expand(ctx, []string{"a"}); !slices.Equal(got, []string{"a#p0", "a#p1", "a#p2"}) {
		t.Fatalf("expand with fewer partitions: %v", got)
	}
	raws["a"] = `{"v":2}`
	if got = ts.Expand(ctx, []string{"a"}); !slices.Equal(got, []string{"a#p0", "a#p1"}) {
		t.Fatalf("expand of a changed rule: %v", got)
	}
	if _, ok := ts.Split("b"); ok {
		t.Error("a rule no longer wanted keeps its split")
	}
}

// TestTasksRepartitioned: a rule whose stream is repartitioned runs the
// tasks of its first stage (one per partition of the stream) and its own
// (one per partition of the internal topic), each with its definition.
func TestTasksRepartitioned(t *testing.T) {
	vc := clock.NewVirtual(0)
	ts, fs, runner, _ := newTestTasks(t, vc)
	ctx := context.Background()
	fs.set("a", 3, nil)
	fs.mu.Lock()
	fs.repart["a"] = 2
	fs.mu.Unlock()
	got := ts.Expand(ctx, []string{"a", "b"})
	want := []string{"a#r0", "a#r1", "a#p0", "a#p1", "a#p2", "b"}
	if !slices.Equal(got, want) {
		t.Fatalf("expand: %v, want %v", got, want)
	}
	started := startedDefs(runner)
	ts.Place("a#r1")
	ts.Place("a#p2")
	testwait.Until(t, "both tasks running", func() bool { return summary(ts, "a#r1") == "running" && summary(ts, "a#p2") == "running" })
	first, second := started("a#r1"), started("a#p2")
	if first.SQL != "SELECT * FROM s" || len(first.Actions) != 1 || first.Actions[0].Props["topic"] != "rekuiper-a-repartition" || first.Task.Partition != 1 {
		t.Errorf("first stage task: sql %q, actions %+v, task %+v", first.SQL, first.Actions, first.Task)
	}
	if second.SQL != "SELECT 2" || second.Task.Topic != "rekuiper-a-repartition" || second.Task.Partition != 2 {
		t.Errorf("second stage task: sql %q, task %+v", second.SQL, second.Task)
	}
	sp := NewSplitPlacement(NewPlacer(PlacerConfig{Node: "n1"}), ts)
	tasks, ok := sp.Tasks("a")
	if !ok || len(tasks) != 5 {
		t.Fatalf("tasks of a: %v, %v", tasks, ok)
	}
	if tasks[1].ID != "a#r1" || tasks[1].Stage != "repartition" || tasks[1].Partition == nil || *tasks[1].Partition != 1 || tasks[1].State != "running" {
		t.Errorf("first stage task status: %+v", tasks[1])
	}
	if tasks[0].Stage != "repartition" || tasks[0].State != "stopped" || tasks[4].ID != "a#p2" || tasks[4].Stage != "" {
		t.Errorf("task statuses: %+v", tasks)
	}
}

func TestTasksRunAndRestart(t *testing.T) {
	vc := clock.NewVirtual(0)
	ts, fs, runner, _ := newTestTasks(t, vc)
	ctx := context.Background()
	fs.set("a", 3, nil)
	ts.Expand(ctx, []string{"a"})
	ts.Place("a#p1")
	ts.Place("a#p1") // once
	testwait.Until(t, "task started", func() bool { return runner.Starts("a#p1") == 1 && summary(ts, "a#p1") == "running" })
	first := runner.Current("a#p1")
	first.Fail(errors.New("broker gone"))
	testwait.Until(t, "task stopped by error, waiting to restart", func() bool { return summary(ts, "a#p1") == "stopped by error" && vc.Pending() == 1 })
	vc.AdvanceTo(1000, nil)
	testwait.Until(t, "task restarted after 1s", func() bool { return runner.Starts("a#p1") == 2 && summary(ts, "a#p1") == "running" })
	second := runner.Current("a#p1")
	ts.Changed("a")
	testwait.Until(t, "task restarted for a changed rule", func() bool { return runner.Starts("a#p1") == 3 && second.Stopped() })

	p := NewPlacer(PlacerConfig{Node: "n1"})
	sp := NewSplitPlacement(p, ts)
	tasks, ok := sp.Tasks("a")
	if !ok || len(tasks) != 3 {
		t.Fatalf("tasks of a: %v, %v", tasks, ok)
	}
	if tasks[1].ID != "a#p1" || tasks[1].Node != "n1" || tasks[1].State != "running" || tasks[1].Metrics["source_demo_0_records_in_total"] != int64(3) {
		t.Errorf("local task: %+v", tasks[1])
	}
	if tasks[0].Node != "" || tasks[0].State != "stopped" {
		t.Errorf("unplaced task: %+v", tasks[0])
	}
	if _, ok := tasks[1].Metrics["sink_log_0_0_last_exception"]; ok {
		t.Error("a task's status carries more than its counters and last checkpoint")
	}
	if tasks[1].Metrics["checkpoint_last_id"] != int64(7) {
		t.Errorf("local task's last checkpoint: %v, want 7", tasks[1].Metrics["checkpoint_last_id"])
	}
	if _, ok := sp.Tasks("b"); ok {
		t.Error("rule b is not split but has tasks")
	}

	third := runner.Current("a#p1")
	if err := ts.Unplace(ctx, "a#p1"); err != nil {
		t.Fatal(err)
	}
	if !third.Stopped() {
		t.Error("Unplace did not stop the task")
	}
	if _, ok := ts.Summary("a#p1"); ok {
		t.Error("an unplaced task still has a summary")
	}
}

func summary(ts *Tasks, id string) string {
	s, _ := ts.Summary(id)
	return s.State
}
