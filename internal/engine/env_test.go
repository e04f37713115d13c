package engine

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/checkpoint"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/builtin"
	"github.com/rekuiper/rekuiper/internal/connector/membus"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
	"github.com/rekuiper/rekuiper/internal/stream"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// This file is the engine tests' fixture: an engine on a fresh catalog
// with the built-in connectors, a memory stream s (v BIGINT) on the bus
// topic "in", and a "counting" sink whose outputs the test reads.

// countingSink is an extension sink that keeps a delivery counter in the
// rule's user state (api.State), so the counter survives restarts.
type countingSink struct {
	state api.State
	out   *sinkLog
}

type sinkLog struct {
	mu   sync.Mutex
	msgs []string
	seqs []int64
}

func (s *countingSink) Connect(context.Context) error { return nil }
func (s *countingSink) Close(context.Context) error   { return nil }
func (s *countingSink) Write(_ context.Context, m *api.SinkMessage) error {
	n, err := s.state.Increment("delivered", 1)
	if err != nil {
		return err
	}
	s.out.mu.Lock()
	s.out.msgs = append(s.out.msgs, string(m.Payload))
	s.out.seqs = append(s.out.seqs, n)
	s.out.mu.Unlock()
	return nil
}

func (l *sinkLog) wait(t *testing.T, n int) ([]string, []int64) {
	t.Helper()
	var msgs []string
	var seqs []int64
	if !testwait.Poll(testwait.Limit, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		msgs, seqs = append([]string(nil), l.msgs...), append([]int64(nil), l.seqs...)
		return len(msgs) >= n
	}) {
		t.Fatalf("got %d messages, want %d: %v", len(msgs), n, msgs)
	}
	return msgs, seqs
}

type testEnv struct {
	runner *Engine
	bus    *membus.Bus
	out    *sinkLog
}

func newTestEnv(t testing.TB) *testEnv {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	store, err := catalog.Open(ctx, dir+"/catalog.db", catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cat, err := catalog.New(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	reg := connector.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	out := &sinkLog{}
	if err := reg.RegisterSink("counting", connector.Spec{}, func(_ map[string]any, deps connector.Deps) (api.Sink, error) {
		return &countingSink{state: deps.State, out: out}, nil
	}); err != nil {
		t.Fatal(err)
	}
	bus := membus.New()
	rn, err := New(Config{
		Catalog: cat, Registry: reg, Clock: clock.Wall{}, Funcs: function.Builtins(),
		Deps:        connector.Deps{Clock: clock.Wall{}, Memory: bus, DataDir: dir},
		Paths:       config.Paths{Data: dir},
		Streams:     stream.NewManager(),
		Checkpoints: &checkpoint.Store{Dir: dir},
		Logger:      discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{runner: rn, bus: bus, out: out}
	e.putStream(t, "s", `CREATE STREAM s (v BIGINT) WITH (DATASOURCE="in", TYPE="memory")`)
	return e
}

func (e *testEnv) publish(t *testing.T, vs ...int64) {
	t.Helper()
	for _, v := range vs {
		if err := e.bus.Publish(context.Background(), membus.Message{Topic: "in", Data: map[string]any{"v": v}}); err != nil {
			t.Fatal(err)
		}
	}
}

// putStream stores a stream as it is, without CheckStream: as a stream
// found in the catalog at start.
func (e *testEnv) putStream(t testing.TB, name, sql string) {
	t.Helper()
	e.put(t, catalog.KindStream, name, sql)
}

func (e *testEnv) put(t testing.TB, kind catalog.StreamKind, name, sql string) {
	t.Helper()
	if _, err := e.runner.cfg.Catalog.PutStream(context.Background(), catalog.Stream{Name: name, Kind: kind, SQL: sql}, catalog.Create); err != nil {
		t.Fatal(err)
	}
}

// createDef checks and stores a stream or table as the REST API does.
func (e *testEnv) createDef(t testing.TB, sql string) {
	t.Helper()
	cs := mustDef(t, sql)
	if err := e.runner.CheckStream(context.Background(), cs); err != nil {
		t.Fatalf("check %s: %v", cs.Name, err)
	}
	kind := catalog.KindStream
	if cs.Kind == ast.KindTable {
		kind = catalog.KindTable
	}
	e.put(t, kind, cs.Name, sql)
}

func mustDef(t testing.TB, sql string) *ast.CreateStreamStmt {
	t.Helper()
	st, err := parser.ParseStatement(sql)
	if err != nil {
		t.Fatal(err)
	}
	return st.(*ast.CreateStreamStmt)
}

// confKey stores the source properties key of connector typ.
func (e *testEnv) confKey(t testing.TB, typ, key string, props map[string]any) {
	t.Helper()
	if _, err := e.runner.cfg.Catalog.PutConfKey(context.Background(), catalog.ConfKey{Category: catalog.ConfSource, Type: typ, Key: key, Props: props}, catalog.Create); err != nil {
		t.Fatal(err)
	}
}

// mustParseDef parses a rule's JSON with the default options.
func mustParseDef(t testing.TB, js string) *rule.Def {
	t.Helper()
	def, err := rule.ParseDef([]byte(js), rule.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return def
}

// start starts def and stops it when the test ends; Stop is idempotent,
// so the test may stop it before.
func (e *testEnv) start(t testing.TB, def *rule.Def) rulemgr.Running {
	t.Helper()
	run, err := e.runner.Start(context.Background(), def)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = run.Stop(context.Background()) })
	return run
}

// startSubscribed starts def as start does and waits until the bus has
// subs subscribers.
func (e *testEnv) startSubscribed(t *testing.T, def *rule.Def, subs int) rulemgr.Running {
	t.Helper()
	run := e.start(t, def)
	waitSubscribed(t, e.bus, subs)
	return run
}

// startRule starts the rule js on stream s and waits until it reads it.
func startRule(t *testing.T, e *testEnv, js string) *running {
	t.Helper()
	return e.startSubscribed(t, mustParseDef(t, js), 1).(*running)
}

func waitSubscribed(t *testing.T, bus *membus.Bus, n int) {
	t.Helper()
	testwait.Until(t, "the source to subscribe", func() bool { return bus.Subscribers() >= n })
}

// waitCheckpoint waits until the rule completed `after` more checkpoints
// than it had when called; with 2, the later one began after the call, so
// it holds what the rule had seen by then.
func waitCheckpoint(t *testing.T, run interface{ Metrics() map[string]any }, after int64) {
	t.Helper()
	completed := func() int64 {
		n, _ := run.Metrics()["checkpoint_completed_total"].(int64)
		return n
	}
	start := completed()
	if !testwait.Poll(testwait.Limit, func() bool { return completed() >= start+after }) {
		t.Fatalf("no checkpoint completed: %v", run.Metrics())
	}
}

// stopAfterCheckpoint stops run once a checkpoint begun after the call
// completed, so that a restart restores what the rule has seen so far.
func stopAfterCheckpoint(t *testing.T, run rulemgr.Running) {
	t.Helper()
	waitCheckpoint(t, run, 2)
	if err := run.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// waitDone waits until run stopped by itself.
func waitDone(t *testing.T, what string, run rulemgr.Running) {
	t.Helper()
	testwait.Until(t, what, func() bool {
		select {
		case <-run.Done():
			return true
		default:
			return false
		}
	})
}

// requireRunning fails with msg if run has stopped.
func requireRunning(t *testing.T, run rulemgr.Running, msg string) {
	t.Helper()
	select {
	case <-run.Done():
		t.Fatal(msg)
	default:
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
