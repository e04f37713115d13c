package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/checkpoint"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
	"github.com/rekuiper/rekuiper/internal/engine"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/stream"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// ruleEnv runs rules reading and writing kafka through the engine's Runner,
// with checkpoints in a folder of its own.
type ruleEnv struct {
	k      *cluster
	runner *engine.Engine
	cat    *catalog.Catalog
	store  *checkpoint.Store
	in     string
	out    string
}

func newRuleEnv(t *testing.T) *ruleEnv {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := catalog.Open(ctx, dir+"/catalog.db", catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := catalog.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	reg := connectortest.Registry(t, Register)
	e := &ruleEnv{k: newCluster(t), in: topicName(t) + "-in", out: topicName(t) + "-out"}
	e.k.createTopic(t, e.in, 1)
	e.k.createTopic(t, e.out, 1)
	// Every checkpoint is kept, so that any of them can be the one the
	// store last marked committed.
	e.store = &checkpoint.Store{Dir: dir, Keep: 1 << 20}
	runner, err := engine.New(engine.Config{
		Catalog: cat, Registry: reg, Clock: clock.Wall{}, Funcs: function.Builtins(),
		Deps:        connector.Deps{Clock: clock.Wall{}, DataDir: dir},
		Paths:       config.Paths{Data: dir},
		Streams:     stream.NewManager(),
		Checkpoints: e.store,
		Logger:      slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.runner, e.cat = runner, cat
	extra, _ := json.Marshal(map[string]any{"brokers": e.k.addr()})
	sql := fmt.Sprintf(`CREATE STREAM s (v BIGINT) WITH (DATASOURCE=%q, TYPE="kafka", FORMAT="json", EXTRA=%q)`, e.in, extra)
	if _, err := cat.PutStream(ctx, catalog.Stream{Name: "s", Kind: catalog.KindStream, SQL: sql}, catalog.Create); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *ruleEnv) start(t *testing.T, def *rule.Def) rulemgr.Running {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := e.runner.Start(ctx, def)
	if err != nil {
		t.Fatal(err)
	}
	// A test that fails midway leaves no rule writing into its folder.
	t.Cleanup(func() { run.Stop(context.Background()) })
	return run
}

func (e *ruleEnv) input(t *testing.T, from, to int) {
	t.Helper()
	var recs []*kgo.Record
	for v := from; v <= to; v++ {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, `{"v":%d}`, v)})
	}
	e.k.produce(t, e.in, recs...)
}

// results reads the output read_committed until n results arrived
// (markers == 0) or until the given number of marker records, and counts
// each value.
func (e *ruleEnv) results(t *testing.T, n, markers int) map[int64]int {
	t.Helper()
	out := map[int64]int{}
	for _, r := range e.k.consume(t, e.out, n, markers, 20*time.Second) {
		var rows []struct{ V int64 }
		if err := json.Unmarshal(r.Value, &rows); err != nil {
			t.Fatalf("result %s: %v", r.Value, err)
		}
		for _, row := range rows {
			out[row.V]++
		}
	}
	return out
}

// committedAfter waits until the store marks a checkpoint above after
// committed and returns its id.
func (e *ruleEnv) committedAfter(t *testing.T, ruleID string, after uint64) uint64 {
	t.Helper()
	var id uint64
	if !testwait.Poll(testwait.Limit, func() bool {
		var ok bool
		id, ok = e.store.Committed(ruleID)
		return ok && id > after
	}) {
		t.Fatalf("rule %s: no checkpoint committed after %d", ruleID, after)
	}
	return id
}

// TestRuleCrashAfterKafkaCommitBeforeStoreMark drives a kafka → kafka
// rule at qos 2 through the window between the Kafka commit of a
// checkpoint's transaction and the store's committed marker: the results
// of checkpoints the store does not know as committed are in Kafka
// already. After the restart every result is seen exactly once by a
// read_committed consumer: the sink's LastCommitted makes the engine
// restore the last checkpoint Kafka committed instead of replaying from
// the store's older one.
func TestRuleCrashAfterKafkaCommitBeforeStoreMark(t *testing.T) {
	e := newRuleEnv(t)
	action, _ := json.Marshal(map[string]any{"kafka": map[string]any{"brokers": e.k.addr(), "topic": e.out}})
	def, err := rule.ParseDef(fmt.Appendf(nil, `{"id":"eo","sql":"SELECT v FROM s","actions":[%s],
		"options":{"qos":2,"checkpointInterval":"50ms"}}`, action), rule.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	run := e.start(t, def)
	e.input(t, 1, 10)
	e.results(t, 10, 0)
	// Checkpoints from now on have their barrier after inputs 1..10: the
	// one marked committed next is the store's view at the "crash".
	seen, _ := e.store.Committed("eo")
	before := e.committedAfter(t, "eo", seen)
	e.input(t, 11, 20)
	e.results(t, 20, 0)
	e.committedAfter(t, "eo", before)
	if err := run.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// The crash: the store's marker writes after `before` never happened,
	// while Kafka committed the transactions with results 11..20.
	if err := e.store.MarkCommitted("eo", before); err != nil {
		t.Fatal(err)
	}

	run = e.start(t, def)
	e.input(t, 21, 30)
	e.results(t, 30, 0)
	e.committedAfter(t, "eo", before)
	if err := run.Stop(ctx); err != nil { // nothing left open after Stop
		t.Fatal(err)
	}
	e.k.produce(t, e.out, &kgo.Record{Value: []byte("marker")})
	got := e.results(t, 0, 1)
	for v := int64(1); v <= 30; v++ {
		if got[v] != 1 {
			t.Errorf("result %d seen %d times", v, got[v])
		}
	}
	if len(got) != 30 {
		t.Errorf("results %v, want 1..30", got)
	}
}

// TestRuleRestartWithoutStateNumbersAfterCommitted: a rule that restarts
// without its checkpoints (lost, or the rule re-created with the same id)
// numbers checkpoints after the last one its Kafka sink committed, so its
// new results commit normally and none is taken for an old checkpoint's.
func TestRuleRestartWithoutStateNumbersAfterCommitted(t *testing.T) {
	e := newRuleEnv(t)
	action, _ := json.Marshal(map[string]any{"kafka": map[string]any{"brokers": e.k.addr(), "topic": e.out}})
	def, err := rule.ParseDef(fmt.Appendf(nil, `{"id":"fresh","sql":"SELECT v FROM s","actions":[%s],
		"options":{"qos":2,"checkpointInterval":"50ms"}}`, action), rule.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The rule's sink bookkeeping, read while the rule is stopped (a
	// producer with its transactional id fences the rule's).
	ruleSink := map[string]any{"brokers": e.k.addr(), "topic": e.out, "transactionalID": "rekuiper-fresh-kafka_0"}
	run := e.start(t, def)
	e.input(t, 1, 10)
	e.results(t, 10, 0)
	e.committedAfter(t, "fresh", 0)
	if err := run.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	before := lastCommitted(t, ruleSink)
	if err := e.store.Delete("fresh"); err != nil {
		t.Fatal(err)
	}

	// Without state the rule reads the input again from the start: 1..10
	// are emitted a second time, then 11..20 once, in checkpoints numbered
	// after the sink's last.
	run = e.start(t, def)
	e.input(t, 11, 20)
	e.results(t, 30, 0)
	e.committedAfter(t, "fresh", 0)
	if err := run.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if after := lastCommitted(t, ruleSink); after <= before {
		t.Errorf("sink's last committed checkpoint %d after the restart, %d before: numbering went back", after, before)
	}
	e.k.produce(t, e.out, &kgo.Record{Value: []byte("marker")})
	got := e.results(t, 0, 1)
	for v := int64(1); v <= 20; v++ {
		want := 1
		if v <= 10 {
			want = 2
		}
		if got[v] != want {
			t.Errorf("result %d seen %d times, want %d", v, got[v], want)
		}
	}
}
