package engine

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// endingSource is a bounded source with nothing in it: its first Read
// ends it.
type endingSource struct {
	closed chan struct{}
	once   *sync.Once
}

func (s *endingSource) Connect(context.Context) error              { return nil }
func (s *endingSource) Read(context.Context) (*api.Message, error) { return nil, io.EOF }
func (s *endingSource) Close(context.Context) error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

// feedSource delivers what the test sends on feed and ends when feed is
// closed; it counts its Closes.
type feedSource struct {
	feed   chan map[string]any
	closes *atomic.Int32
}

func (s *feedSource) Connect(context.Context) error { return nil }
func (s *feedSource) Read(ctx context.Context) (*api.Message, error) {
	select {
	case m, ok := <-s.feed:
		if !ok {
			return nil, io.EOF
		}
		return &api.Message{Data: m}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (s *feedSource) Close(context.Context) error { s.closes.Add(1); return nil }

// TestJoinOutlivesAStreamThatEndsAtOnce starts a join whose first stream
// is bounded and empty. Building the second stream's source waits until
// the first stream's source was closed, or a moment: were the first
// stream started before the second is attached, its end would stop the
// rule there and then, and the stop would miss the second subscription,
// left running. The rule must run until both streams ended, and release
// both.
func TestJoinOutlivesAStreamThatEndsAtOnce(t *testing.T) {
	e := newTestEnv(t)
	firstClosed := make(chan struct{})
	var firstOnce sync.Once
	if err := e.runner.cfg.Registry.RegisterSource("ending", connector.Spec{}, func(map[string]any, connector.Deps) (api.Source, error) {
		return &endingSource{closed: firstClosed, once: &firstOnce}, nil
	}); err != nil {
		t.Fatal(err)
	}
	feed := make(chan map[string]any)
	var closes atomic.Int32
	if err := e.runner.cfg.Registry.RegisterSource("fed", connector.Spec{}, func(map[string]any, connector.Deps) (api.Source, error) {
		select {
		case <-firstClosed:
		case <-time.After(300 * time.Millisecond):
		}
		return &feedSource{feed: feed, closes: &closes}, nil
	}); err != nil {
		t.Fatal(err)
	}
	for name, typ := range map[string]string{"first": "ending", "second": "fed"} {
		e.putStream(t, name, `CREATE STREAM `+name+` (k BIGINT) WITH (DATASOURCE="x", TYPE="`+typ+`")`)
	}
	run := e.start(t, mustParseDef(t, `{"id":"j","sql":"SELECT * FROM first LEFT JOIN second ON first.k = second.k GROUP BY COUNTWINDOW(1)","actions":[{"counting":{}}]}`))
	// The second stream is read: the rule is attached to it.
	feed <- map[string]any{"k": int64(1)}
	// The first stream ended at once: its source is closed only when the
	// rule stops, which it must not do while the second stream runs.
	testwait.Until(t, "the first stream to end", func() bool { return endedStreams(run) >= 1 })
	requireRunning(t, run, "the rule stopped while its second stream was still open")
	close(feed)
	waitDone(t, "the rule to end with its last stream", run)
	testwait.Until(t, "the second stream's source to be closed", func() bool { return closes.Load() == 1 })
	if err := run.Err(); err != nil {
		t.Fatalf("rule ended with %v", err)
	}
	if n := e.runner.cfg.Streams.Len(); n != 0 {
		t.Fatalf("%d subscriptions left after the rule ended", n)
	}
}

// TestRuleOnAnEndedSharedStreamReadsItAgain starts a rule on a bounded
// stream whose shared subscription already ended (another rule, still
// running, holds it): the new rule gets a subscription of its own that
// reads the source again, and ends with it.
func TestRuleOnAnEndedSharedStreamReadsItAgain(t *testing.T) {
	e := newTestEnv(t)
	var built atomic.Int32
	feeds := make(chan chan map[string]any, 2)
	var closes atomic.Int32
	if err := e.runner.cfg.Registry.RegisterSource("fed", connector.Spec{}, func(map[string]any, connector.Deps) (api.Source, error) {
		built.Add(1)
		f := make(chan map[string]any)
		feeds <- f
		return &feedSource{feed: f, closes: &closes}, nil
	}); err != nil {
		t.Fatal(err)
	}
	e.putStream(t, "b", `CREATE STREAM b (k BIGINT) WITH (DATASOURCE="x", TYPE="fed")`)
	start := func(id, sql string) rulemgr.Running {
		return e.start(t, mustParseDef(t, `{"id":"`+id+`","sql":"`+sql+`","actions":[{"counting":{}}]}`))
	}
	// Rule a joins b with the memory stream s, which never ends: a keeps
	// running, and holds b's subscription, after b ended.
	a := start("a", "SELECT * FROM b LEFT JOIN s ON b.k = s.v GROUP BY COUNTWINDOW(1)")
	close(<-feeds)
	testwait.Until(t, "stream b to end for rule a", func() bool { return endedStreams(a) == 1 })
	second := start("second", "SELECT k FROM b")
	if n := built.Load(); n != 2 {
		t.Fatalf("source of b built %d times, want 2 (a new subscription for the new rule)", n)
	}
	f := <-feeds
	f <- map[string]any{"k": int64(7)}
	e.out.wait(t, 1)
	close(f)
	waitDone(t, "the second rule to end with its stream", second)
	requireRunning(t, a, "rule a stopped though its stream s is still open")
	testwait.Until(t, "the second subscription's source to be closed", func() bool { return closes.Load() == 1 })
}

// endedStreams is how many of run's streams have ended.
func endedStreams(run rulemgr.Running) int {
	rr := run.(*running)
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.ended
}
