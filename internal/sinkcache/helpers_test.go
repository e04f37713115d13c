package sinkcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// fakeSink is an api.Sink whose failures the test controls.
type fakeSink struct {
	mu         sync.Mutex
	down       bool                        // Write fails with a retryable error
	reject     func(*api.SinkMessage) bool // Write fails permanently
	connectErr error
	got        []*api.SinkMessage
	attempts   map[int64]int
	connects   int
	closed     bool
	countOnly  bool
	count      int
	reached    chan struct{} // with countOnly: closed once count is reachAt
	reachAt    int
}

func newFake() *fakeSink { return &fakeSink{attempts: map[int64]int{}} }

func (f *fakeSink) Connect(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.connects++
	return f.connectErr
}

func (f *fakeSink) Write(_ context.Context, msg *api.SinkMessage) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.countOnly {
		if f.down {
			return api.Retryable(errors.New("broker down"))
		}
		f.count++
		if f.count == f.reachAt {
			close(f.reached)
		}
		return nil
	}
	f.attempts[num(msg)]++
	if f.reject != nil && f.reject(msg) {
		return errors.New("payload rejected")
	}
	if f.down {
		return api.Retryable(errors.New("broker down"))
	}
	f.got = append(f.got, msg)
	return nil
}

func (f *fakeSink) Close(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeSink) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

func (f *fakeSink) setConnectErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.connectErr = err
}

func (f *fakeSink) delivered() []*api.SinkMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*api.SinkMessage(nil), f.got...)
}

func (f *fakeSink) attemptsOf(n int64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts[n]
}

// reach returns a channel closed once a countOnly sink counted n records.
func (f *fakeSink) reach(n int) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reached, f.reachAt = make(chan struct{}), n
	return f.reached
}

func (f *fakeSink) delivCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.countOnly {
		return f.count
	}
	return len(f.got)
}

// msg builds record n: one row {"n": n} and its JSON payload.
func msg(n int) *api.SinkMessage {
	return &api.SinkMessage{
		Rows:    []map[string]any{{"n": int64(n), "pad": "0123456789abcdef"}},
		Payload: fmt.Appendf(nil, `{"n":%d}`, n),
	}
}

func num(m *api.SinkMessage) int64 {
	if len(m.Rows) == 0 {
		return -1
	}
	n, _ := m.Rows[0]["n"].(int64)
	return n
}

func nums(ms []*api.SinkMessage) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = num(m)
	}
	return out
}

func seq(from, to int) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, int64(i))
	}
	return out
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// wrap creates a cache on t's temporary dir (unless cfg.Dir is set),
// closed at cleanup.
func wrap(t *testing.T, inner api.Sink, cfg Config, deps Deps) *Cache {
	t.Helper()
	cfg.EnableCache = true
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	c, err := Wrap(inner, cfg, deps)
	if err != nil {
		t.Fatalf("Wrap: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func mustWrite(t *testing.T, c *Cache, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		if err := c.Write(context.Background(), msg(i)); err != nil {
			t.Fatalf("Write(%d): %v", i, err)
		}
	}
}

// pump advances v by step at each poll until cond holds.
func pump(t *testing.T, v *clock.Virtual, step time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, what, func() bool {
		if cond() {
			return true
		}
		v.AdvanceTo(v.Now().Add(step).UnixMilli(), nil)
		return false
	})
}

// abandon simulates kill -9: the replay goroutine stops where it is and
// the files are closed without any flush, sync or head update.
func abandon(c *Cache) {
	c.mu.Lock()
	started := c.started
	c.mu.Unlock()
	c.cancel()
	if started {
		close(c.stop)
		<-c.done
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.syncTimer != nil {
		c.syncTimer.Stop()
	}
	_ = c.disk.close()
}
