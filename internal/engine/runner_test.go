package engine

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
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
	"github.com/rekuiper/rekuiper/internal/stream"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

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
	if _, err := cat.PutStream(ctx, catalog.Stream{Name: "s", Kind: catalog.KindStream,
		SQL: `CREATE STREAM s (v BIGINT) WITH (DATASOURCE="in", TYPE="memory")`}, catalog.Create); err != nil {
		t.Fatal(err)
	}
	return &testEnv{runner: rn, bus: bus, out: out}
}

func (e *testEnv) publish(t *testing.T, vs ...int64) {
	t.Helper()
	for _, v := range vs {
		if err := e.bus.Publish(context.Background(), membus.Message{Topic: "in", Data: map[string]any{"v": v}}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunnerRestoresStateAcrossRestart runs a count-window rule at qos 1
// over a push source (memory, made replayable by the source log), stops it
// after a checkpoint with a window half full, starts it again and checks
// that the window, and the extension sink's user state, carried over.
func TestRunnerRestoresStateAcrossRestart(t *testing.T) {
	e := newTestEnv(t)
	def, err := rule.ParseDef([]byte(`{"id":"r","sql":"SELECT sum(v) AS s, count(*) AS c FROM s GROUP BY COUNTWINDOW(3)",
		"actions":[{"counting":{}}],"options":{"qos":1,"checkpointInterval":"50ms"}}`), rule.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run, err := e.runner.Start(ctx, def)
	if err != nil {
		t.Fatal(err)
	}
	waitSubscribed(t, e.bus, 1)
	e.publish(t, 1, 2, 3, 10)
	if msgs, _ := e.out.wait(t, 1); msgs[0] != `[{"c":3,"s":6}]` {
		t.Fatalf("first window %s", msgs[0])
	}
	waitCheckpoint(t, run, 2)
	if err := run.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	run, err = e.runner.Start(ctx, def)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Stop(ctx)
	waitSubscribed(t, e.bus, 1)
	e.publish(t, 20, 30)
	msgs, seqs := e.out.wait(t, 2)
	if msgs[1] != `[{"c":3,"s":60}]` {
		t.Fatalf("window across the restart = %s, want the restored 10 with 20 and 30", msgs[1])
	}
	if seqs[1] != 2 {
		t.Fatalf("user-state counter after restart = %d, want 2", seqs[1])
	}
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

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestRestSinkCacheRidesOutOutage sends a rule's results to an HTTP server
// that first refuses connections, then answers 503, then 200: with the sink
// cache on, every record is delivered, in order, replays marked "resent".
func TestRestSinkCacheRidesOutOutage(t *testing.T) {
	e := newTestEnv(t)
	var mu sync.Mutex
	var got []string
	phase := 1       // 1: answer 503; 2: accept
	unavailable := 0 // 503 answers
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if phase == 1 {
			unavailable++
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b))
	}))
	// Reserve the address but refuse connections until started.
	addr := srv.Listener.Addr().String()
	srv.Listener.Close()
	def, err := rule.ParseDef([]byte(`{"id":"http","sql":"SELECT v FROM s",
		"actions":[{"rest":{"url":"http://`+addr+`/ingest","sendSingle":true,"enableCache":true,
		"resendInterval":"20ms","resendIndicatorField":"resent","resendPriority":1}}]}`), rule.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run, err := e.runner.Start(ctx, def)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Stop(ctx)
	waitSubscribed(t, e.bus, 1)
	cached := func() int64 {
		n, _ := run.Metrics()["sink_rest_0_0_cache_records_cached_total"].(int64)
		return n
	}
	e.publish(t, 1, 2, 3) // connection refused
	testwait.Until(t, "the refused records to be cached", func() bool { return cached() == 3 })
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	e.publish(t, 4, 5) // cached behind the backlog, which gets 503s
	testwait.Until(t, "a replay to get a 503 and all five records to be cached", func() bool {
		mu.Lock()
		answered := unavailable
		mu.Unlock()
		return answered > 0 && cached() == 5
	})
	mu.Lock()
	phase = 2
	mu.Unlock()
	e.publish(t, 6)
	// On a timeout the checks below say what is missing.
	testwait.Poll(testwait.Limit, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 6
	})
	mu.Lock()
	defer mu.Unlock()
	want := []string{`{"resent":true,"v":1}`, `{"resent":true,"v":2}`, `{"resent":true,"v":3}`, `{"resent":true,"v":4}`, `{"resent":true,"v":5}`}
	if len(got) < 6 {
		t.Fatalf("delivered %d records: %v", len(got), got)
	}
	for i, w := range want {
		if got[i] != w {
			t.Fatalf("record %d = %s, want %s (all: %v)", i, got[i], w, got)
		}
	}
	if !strings.Contains(got[5], `"v":6`) {
		t.Fatalf("live record = %s, want v 6 after every cached record", got[5])
	}
	m := run.Metrics()
	if c, _ := m["sink_rest_0_0_cache_records_replayed_total"].(int64); c < 5 {
		t.Fatalf("replayed counter %v, want >= 5", m["sink_rest_0_0_cache_records_replayed_total"])
	}
}

// TestBadRowsAreCountedAndRuleKeepsRunning: a row whose expression fails
// increments exceptions_total and records last_exception; without sendError
// nothing is emitted for it, and the next rows flow.
func TestBadRowsAreCountedAndRuleKeepsRunning(t *testing.T) {
	e := newTestEnv(t)
	def, err := rule.ParseDef([]byte(`{"id":"bad","sql":"SELECT v * 2 AS d FROM s","actions":[{"counting":{}}]}`), rule.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run, err := e.runner.Start(ctx, def)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Stop(ctx)
	waitSubscribed(t, e.bus, 1)
	if err := e.bus.Publish(ctx, membus.Message{Topic: "in", Data: map[string]any{"v": "x"}}); err != nil {
		t.Fatal(err)
	}
	e.publish(t, 21)
	msgs, _ := e.out.wait(t, 1)
	if msgs[0] != `[{"d":42}]` {
		t.Fatalf("emitted %v, want only the good row", msgs)
	}
	m := run.Metrics()
	if n, _ := m["op_2_project_0_exceptions_total"].(int64); n != 1 {
		t.Fatalf("project exceptions_total = %v, want 1 (%v)", m["op_2_project_0_exceptions_total"], m)
	}
	if s, _ := m["op_2_project_0_last_exception"].(string); !strings.Contains(s, "invalid operation string(x) * int64(2)") {
		t.Fatalf("last_exception = %q", s)
	}
}
