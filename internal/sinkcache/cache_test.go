package sinkcache

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// reshapeJSON rebuilds the payload from the rows, as the engine would.
func reshapeJSON(m *api.SinkMessage) (*api.SinkMessage, error) {
	b, err := json.Marshal(m.Rows[0])
	if err != nil {
		return nil, err
	}
	out := *m
	out.Payload = b
	return &out, nil
}

func TestOutageThenRecovery(t *testing.T) {
	for _, tc := range []struct {
		name     string
		priority int
	}{
		{"cacheFirst", 1},
		{"shared", 0},
		{"liveFirst", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake()
			c := wrap(t, fake, Config{
				MemoryCacheThreshold: 8, BufferPageSize: 4, ResendInterval: time.Millisecond,
				ResendPriority: tc.priority, ResendIndicatorField: "resent",
			}, Deps{Reshape: reshapeJSON})
			if err := c.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, c, 1, 5)
			fake.setDown(true)
			mustWrite(t, c, 6, 50)
			if s := c.Stats(); s.Length != 45 || s.DiskLength != 45 || s.Cached != 45 || s.Delivered != 5 {
				t.Fatalf("during outage: %+v", s)
			}
			fake.setDown(false)
			mustWrite(t, c, 51, 100)
			testwait.Until(t, "100 deliveries", func() bool { return fake.delivCount() >= 100 })

			got := fake.delivered()
			if len(got) != 100 {
				t.Fatalf("delivered %d records, want 100", len(got))
			}
			if s := c.Stats(); s.Delivered+s.Replayed != 100 || s.Replayed < 45 {
				t.Fatalf("after recovery: delivered %d + replayed %d, want 100 with at least the 45 cached replayed", s.Delivered, s.Replayed)
			}
			seen := map[int64]bool{}
			var cached, live []int64
			for _, m := range got {
				n := num(m)
				if seen[n] {
					t.Fatalf("record %d delivered twice", n)
				}
				seen[n] = true
				if m.Resent {
					if m.Rows[0]["resent"] != true || !strings.Contains(string(m.Payload), `"resent":true`) {
						t.Errorf("replayed record %d not marked in rows/payload: %v %s", n, m.Rows, m.Payload)
					}
					cached = append(cached, n)
				} else {
					if _, ok := m.Rows[0]["resent"]; ok {
						t.Errorf("live record %d carries the indicator field", n)
					}
					live = append(live, n)
				}
				if n >= 6 && n <= 50 && !m.Resent {
					t.Errorf("record %d was cached but not marked resent", n)
				}
				if n <= 5 && m.Resent {
					t.Errorf("record %d was never cached but marked resent", n)
				}
			}
			for _, part := range [][]int64{cached, live} {
				for i := 1; i < len(part); i++ {
					if part[i] <= part[i-1] {
						t.Fatalf("out of order: %v", part)
					}
				}
			}
			if tc.priority == 1 && !equal(nums(got), seq(1, 100)) {
				t.Fatalf("cacheFirst order: %v", nums(got))
			}
			if tc.priority != 1 && len(cached) != 45 {
				t.Errorf("replayed %d records, want 45 (live records bypass the backlog)", len(cached))
			}
			s := c.Stats()
			if s.Length != 0 || s.MemoryLength != 0 || s.DiskLength != 0 || s.DiskBytes != 0 || s.Replayed != int64(len(cached)) {
				t.Errorf("after recovery: %+v", s)
			}
			segs, _ := filepath.Glob(filepath.Join(c.cfg.Dir, "*.seg"))
			if len(segs) != 0 {
				t.Errorf("segments left after the backlog drained: %v", segs)
			}
		})
	}
}

// The replay goroutine is paced by a virtual clock that the test moves, so
// the interleaving of live and cached records is deterministic.
func TestResendPriority(t *testing.T) {
	for _, tc := range []struct {
		name       string
		priority   int
		alterQueue bool
		afterLive  []int64 // inner sink, after c1 replayed and 11..13 written
		final      []int64
	}{
		{"cacheFirst", 1, false, []int64{1}, seq(1, 13)},
		{"shared", 0, false, []int64{1, 2, 11, 3, 12, 4, 13},
			[]int64{1, 2, 11, 3, 12, 4, 13, 5, 6, 7, 8, 9, 10}},
		{"liveFirst", -1, false, []int64{1, 11, 12, 13}, []int64{1, 11, 12, 13, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := clock.NewVirtual(1_000_000)
			fake := newFake()
			c := wrap(t, fake, Config{ResendInterval: time.Hour, ResendPriority: tc.priority,
				MemoryCacheThreshold: 3, BufferPageSize: 2}, Deps{Clock: v})
			mustWrite(t, c, 1, 10) // not connected yet: everything is cached
			if err := c.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			testwait.Until(t, "first replay", func() bool { return fake.delivCount() == 1 })
			mustWrite(t, c, 11, 13)
			if got := nums(fake.delivered()); !equal(got, tc.afterLive) {
				t.Fatalf("after live writes: got %v, want %v", got, tc.afterLive)
			}
			pump(t, v, time.Hour, "all deliveries", func() bool { return fake.delivCount() == len(tc.final) })
			got := fake.delivered()
			if !equal(nums(got), tc.final) {
				t.Fatalf("final order: got %v, want %v", nums(got), tc.final)
			}
			for _, m := range got {
				wantResent := num(m) <= 10 || tc.priority == 1
				if m.Resent != wantResent {
					t.Errorf("record %d: Resent=%v, want %v", num(m), m.Resent, wantResent)
				}
			}
		})
	}
}

func TestResendAlterQueue(t *testing.T) {
	inner, alt := newFake(), newFake()
	c := wrap(t, inner, Config{ResendAlterQueue: true, ResendDestination: "retry/topic", ResendInterval: time.Millisecond},
		Deps{Alternate: alt})
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	inner.setDown(true)
	alt.setDown(true)
	mustWrite(t, c, 1, 5)
	alt.setDown(false)
	testwait.Until(t, "replays on the alternate sink", func() bool { return alt.delivCount() == 5 })
	if got := nums(alt.delivered()); !equal(got, seq(1, 5)) {
		t.Fatalf("alternate got %v", got)
	}
	inner.setDown(false)
	mustWrite(t, c, 6, 7)
	if got := nums(inner.delivered()); !equal(got, seq(6, 7)) {
		t.Fatalf("inner got %v, want live records only", got)
	}
	if s := c.Stats(); s.Destination != "retry/topic" || s.Replayed != 5 {
		t.Errorf("stats: %+v", s)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !alt.closed || !inner.closed {
		t.Error("Close did not close both sinks")
	}
}

func TestBounds(t *testing.T) {
	for _, tc := range []struct {
		policy DropPolicy
		want   []int64
	}{
		{DropOldest, seq(16, 25)},
		{DropCurrent, seq(1, 10)},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			dir := t.TempDir()
			cfg := Config{Dir: dir, MaxDiskCache: 10, MemoryCacheThreshold: 4, BufferPageSize: 3,
				DropPolicy: tc.policy, ResendInterval: time.Millisecond}
			fake := newFake()
			c := wrap(t, fake, cfg, Deps{})
			mustWrite(t, c, 1, 25) // never connected: a long outage
			if s := c.Stats(); s.Dropped != 15 || s.Length != 10 || s.DiskLength != 10 {
				t.Fatalf("stats under outage: %+v", s)
			}
			if err := c.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			// The bound must hold across a restart too.
			c2 := wrap(t, fake, cfg, Deps{})
			if s := c2.Stats(); s.Length != 10 {
				t.Fatalf("after restart: %+v", s)
			}
			if err := c2.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			testwait.Until(t, "replay", func() bool { return fake.delivCount() == 10 })
			if got := nums(fake.delivered()); !equal(got, tc.want) {
				t.Fatalf("delivered %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPermanentErrors(t *testing.T) {
	t.Run("live", func(t *testing.T) {
		fake := newFake()
		fake.reject = func(m *api.SinkMessage) bool { return num(m) == 3 }
		c := wrap(t, fake, Config{}, Deps{})
		if err := c.Connect(context.Background()); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, c, 1, 2)
		err := c.Write(context.Background(), msg(3))
		if err == nil || errors.Is(err, api.ErrRetryable) {
			t.Fatalf("Write(3) = %v, want the permanent error", err)
		}
		mustWrite(t, c, 4, 4)
		// Refused for good, record 3 was not cached (the stats below say
		// so): nothing is left that could try it again.
		if n := fake.attemptsOf(3); n != 1 {
			t.Errorf("record 3 attempted %d times, want 1", n)
		}
		if s := c.Stats(); s.Failed != 1 || s.Length != 0 || s.Cached != 0 || s.LastError == "" {
			t.Errorf("stats: %+v", s)
		}
	})
	t.Run("replay", func(t *testing.T) {
		fake := newFake()
		c := wrap(t, fake, Config{ResendInterval: time.Millisecond}, Deps{})
		mustWrite(t, c, 1, 5)
		fake.mu.Lock()
		fake.reject = func(m *api.SinkMessage) bool { return num(m) == 3 }
		fake.mu.Unlock()
		if err := c.Connect(context.Background()); err != nil {
			t.Fatal(err)
		}
		testwait.Until(t, "replay", func() bool { return c.Stats().Length == 0 })
		if got := nums(fake.delivered()); !equal(got, []int64{1, 2, 4, 5}) {
			t.Fatalf("delivered %v", got)
		}
		if n := fake.attemptsOf(3); n != 1 {
			t.Errorf("record 3 attempted %d times, want 1", n)
		}
		if s := c.Stats(); s.Failed != 1 || s.Replayed != 4 {
			t.Errorf("stats: %+v", s)
		}
	})
}

func TestConnect(t *testing.T) {
	t.Run("retryable error starts the cache", func(t *testing.T) {
		fake := newFake()
		fake.setConnectErr(api.Retryable(errors.New("connection refused")))
		c := wrap(t, fake, Config{ResendInterval: time.Millisecond}, Deps{})
		if err := c.Connect(context.Background()); err != nil {
			t.Fatalf("Connect: %v", err)
		}
		mustWrite(t, c, 1, 3)
		if s := c.Stats(); s.Connected || s.Length != 3 {
			t.Fatalf("stats while unreachable: %+v", s)
		}
		fake.setConnectErr(nil)
		testwait.Until(t, "delivery after reconnect", func() bool { return fake.delivCount() == 3 })
		if got := nums(fake.delivered()); !equal(got, seq(1, 3)) {
			t.Fatalf("delivered %v", got)
		}
	})
	t.Run("permanent error is returned", func(t *testing.T) {
		fake := newFake()
		fake.setConnectErr(errors.New("bad credentials"))
		c := wrap(t, fake, Config{}, Deps{})
		if err := c.Connect(context.Background()); err == nil || !strings.Contains(err.Error(), "bad credentials") {
			t.Fatalf("Connect = %v", err)
		}
	})
}

func TestResendIntervalZero(t *testing.T) {
	fake := newFake()
	c := wrap(t, fake, Config{ResendInterval: 0, ResendPriority: 1, MemoryCacheThreshold: 2, BufferPageSize: 2}, Deps{})
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	fake.setDown(true)
	mustWrite(t, c, 1, 20)
	// The live write, the first replay and a retry one floor later.
	testwait.Until(t, "a failed retry at the floor", func() bool { return fake.attemptsOf(1) >= 3 })
	fake.setDown(false)
	mustWrite(t, c, 21, 30)
	testwait.Until(t, "drain", func() bool { return fake.delivCount() == 30 })
	if got := nums(fake.delivered()); !equal(got, seq(1, 30)) {
		t.Fatalf("delivered %v", got)
	}
	if n := fake.attemptsOf(1); n > 10 {
		t.Errorf("record 1 attempted %d times in ~150ms: retries are not paced", n)
	}
}

func TestReplayPacing(t *testing.T) {
	v := clock.NewVirtual(0)
	dir := t.TempDir()
	fake := newFake()
	// No periodic fsync: the replay's interval is the only timer on v.
	c := wrap(t, fake, Config{Dir: dir, ResendInterval: time.Second, Sync: SyncNone}, Deps{Clock: v})
	mustWrite(t, c, 1, 3)
	v.AdvanceTo(5000, nil)
	if s := c.Stats(); s.OldestAge != 5*time.Second {
		t.Errorf("OldestAge = %v, want 5s", s.OldestAge)
	}
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Replay starts without new traffic, then waits one interval per record.
	testwait.Until(t, "first replay", func() bool { return fake.delivCount() == 1 })
	testwait.Until(t, "the replay to wait for its interval, or a second one", func() bool {
		return v.Pending() == 1 || fake.delivCount() > 1
	})
	if n := fake.delivCount(); n != 1 {
		t.Fatalf("%d records replayed before the interval passed", n)
	}
	v.AdvanceTo(6000, nil)
	testwait.Until(t, "second replay", func() bool { return fake.delivCount() == 2 })
	v.AdvanceTo(7000, nil)
	testwait.Until(t, "third replay", func() bool { return fake.delivCount() == 3 })
}

func TestCleanCacheAtStop(t *testing.T) {
	for _, clean := range []bool{false, true} {
		t.Run(map[bool]string{false: "keep", true: "clean"}[clean], func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "rule1", "sink0")
			cfg := Config{Dir: dir, CleanCacheAtStop: clean}
			c := wrap(t, newFake(), cfg, Deps{})
			mustWrite(t, c, 1, 5)
			if err := c.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := c.Write(context.Background(), msg(6)); !errors.Is(err, ErrClosed) {
				t.Errorf("Write after Close = %v, want ErrClosed", err)
			}
			_, err := os.Stat(dir)
			if clean != os.IsNotExist(err) {
				t.Fatalf("clean=%v: stat dir: %v", clean, err)
			}
			c2 := wrap(t, newFake(), cfg, Deps{})
			want := 5
			if clean {
				want = 0
			}
			if s := c2.Stats(); s.Length != want {
				t.Errorf("reopened cache holds %d records, want %d", s.Length, want)
			}
		})
	}
}

func TestPassThrough(t *testing.T) {
	fake := newFake()
	c, err := Wrap(fake, Config{}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	fake.setDown(true)
	if err := c.Write(context.Background(), msg(1)); !errors.Is(err, api.ErrRetryable) {
		t.Errorf("Write = %v, want the inner retryable error", err)
	}
	if err := c.Flush(context.Background()); err != nil {
		t.Errorf("Flush: %v", err)
	}
	if err := c.Close(context.Background()); err != nil || !fake.closed {
		t.Errorf("Close = %v, closed=%v", err, fake.closed)
	}
}

func TestFlushSyncs(t *testing.T) {
	for _, sync := range []SyncPolicy{SyncNone, SyncPeriodic, SyncAlways} {
		t.Run(string(sync), func(t *testing.T) {
			c := wrap(t, newFake(), Config{Sync: sync}, Deps{})
			mustWrite(t, c, 1, 3)
			if err := c.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			c.mu.Lock()
			dirty := c.disk.dirty
			c.mu.Unlock()
			if dirty {
				t.Error("segment log still dirty after Flush")
			}
		})
	}
}
