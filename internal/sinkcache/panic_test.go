package sinkcache

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/panics"
)

// laterPanicSink fails its first write retryably (the cache keeps the
// record), then returns a panic it recovered on a goroutine of its own.
type laterPanicSink struct {
	writes atomic.Int64
	err    error
}

func (s *laterPanicSink) Connect(context.Context) error { return nil }
func (s *laterPanicSink) Close(context.Context) error   { return nil }
func (s *laterPanicSink) Write(context.Context, *api.SinkMessage) error {
	if s.writes.Add(1) == 1 {
		return api.Retryable(errors.New("busy"))
	}
	return s.err
}

// panicCatcher collects what the cache reports to its owner.
type panicCatcher chan *panics.Error

func (p panicCatcher) report(e *panics.Error) { p <- e }

func (p panicCatcher) wait(t *testing.T) *panics.Error {
	t.Helper()
	select {
	case e := <-p:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("the cache did not report the panic")
		return nil
	}
}

// TestReplayOfARecoveredPanic: a sink that returns a panic it recovered
// elsewhere (its linger timer's, say) to a replay stops the rule with it,
// instead of counting the record as rejected.
func TestReplayOfARecoveredPanic(t *testing.T) {
	origin := panics.Call("sql sink linger flush", func() { panic("driver bug") })
	inner := &laterPanicSink{err: fmt.Errorf("write: %w", origin)}
	got := make(panicCatcher, 1)
	c := wrap(t, inner, Config{ResendInterval: time.Millisecond}, Deps{OnPanic: got.report})
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, c, 1, 1)
	if e := got.wait(t); e != origin {
		t.Fatalf("reported %v; want the sink's panic %v", e, origin)
	}
}

// TestPeriodicSyncPanic: a panic in the periodic fsync, which runs on a
// timer's goroutine, is reported to the cache's owner (the rule stops)
// instead of ending the process.
func TestPeriodicSyncPanic(t *testing.T) {
	got := make(panicCatcher, 1)
	var c *Cache
	var disk *segLog
	restore := func(e *panics.Error) {
		c.mu.Lock()
		c.disk = disk // for Close
		c.mu.Unlock()
		got.report(e)
	}
	c = wrap(t, newFake(), Config{Sync: SyncPeriodic, SyncInterval: time.Millisecond}, Deps{OnPanic: restore})
	c.mu.Lock()
	disk, c.disk = c.disk, nil // the sync dereferences it
	c.mu.Unlock()
	c.mu.Lock()
	c.scheduleSync()
	c.mu.Unlock()
	e := got.wait(t)
	if want := "panic: sink cache sync: runtime error: invalid memory address or nil pointer dereference"; e.Error() != want {
		t.Fatalf("reported %q; want %q", e, want)
	}
}
