package engine

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/rekuiper/rekuiper/internal/connector/membus"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// sumWindowRule sums and counts s in count windows of 3 at qos 1, with
// frequent checkpoints: a window half full at a stop is restored.
const sumWindowRule = `{"id":"r","sql":"SELECT sum(v) AS s, count(*) AS c FROM s GROUP BY COUNTWINDOW(3)",
	"actions":[{"counting":{}}],"options":{"qos":1,"checkpointInterval":"50ms"}}`

// stopWithHalfWindow runs sumWindowRule until its first window (1, 2, 3)
// is out and the next one holds 10, and stops it after a checkpoint that
// has the 10; it returns the rule.
func (e *testEnv) stopWithHalfWindow(t *testing.T) *rule.Def {
	t.Helper()
	def := mustParseDef(t, sumWindowRule)
	run := e.startSubscribed(t, def, 1)
	e.publish(t, 1, 2, 3, 10)
	if msgs, _ := e.out.wait(t, 1); msgs[0] != `[{"c":3,"s":6}]` {
		t.Fatalf("first window %s", msgs[0])
	}
	stopAfterCheckpoint(t, run)
	return def
}

// TestRunnerRestoresStateAcrossRestart runs a count-window rule at qos 1
// over a push source (memory, made replayable by the source log), stops it
// after a checkpoint with a window half full, starts it again and checks
// that the window, and the extension sink's user state, carried over.
func TestRunnerRestoresStateAcrossRestart(t *testing.T) {
	e := newTestEnv(t)
	def := e.stopWithHalfWindow(t)
	e.startSubscribed(t, def, 1)
	e.publish(t, 20, 30)
	msgs, seqs := e.out.wait(t, 2)
	if msgs[1] != `[{"c":3,"s":60}]` {
		t.Fatalf("window across the restart = %s, want the restored 10 with 20 and 30", msgs[1])
	}
	if seqs[1] != 2 {
		t.Fatalf("user-state counter after restart = %d, want 2", seqs[1])
	}
}

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
	run := startRule(t, e, `{"id":"http","sql":"SELECT v FROM s",
		"actions":[{"rest":{"url":"http://`+addr+`/ingest","sendSingle":true,"enableCache":true,
		"resendInterval":"20ms","resendIndicatorField":"resent","resendPriority":1}}]}`)
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
	run := startRule(t, e, `{"id":"bad","sql":"SELECT v * 2 AS d FROM s","actions":[{"counting":{}}]}`)
	if err := e.bus.Publish(context.Background(), membus.Message{Topic: "in", Data: map[string]any{"v": "x"}}); err != nil {
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
