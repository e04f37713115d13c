package sinkcache

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "*"+segSuffix))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segments in %s: %v", dir, err)
	}
	sort.Strings(segs)
	return segs[len(segs)-1]
}

// Records accepted while the sink is down survive an abrupt end of the
// process (no Close, no sync beyond the policy) and are replayed in order
// by the next Wrap on the same directory, without new traffic.
func TestCrashSurvival(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sync    SyncPolicy
		tornCut int64 // bytes cut from the last segment after the crash
		want    []int64
	}{
		{"none", SyncNone, 0, seq(1, 50)},
		{"periodic", SyncPeriodic, 0, seq(1, 50)},
		{"always", SyncAlways, 0, seq(1, 50)},
		{"torn tail", SyncNone, 3, seq(1, 49)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := Config{Dir: dir, Sync: tc.sync, MemoryCacheThreshold: 4, BufferPageSize: 8, ResendInterval: time.Millisecond}
			down := newFake()
			down.setDown(true)
			c := wrap(t, down, cfg, Deps{})
			if err := c.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, c, 1, 50)
			abandon(c)
			if tc.tornCut > 0 {
				seg := lastSegment(t, dir)
				fi, err := os.Stat(seg)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(seg, fi.Size()-tc.tornCut); err != nil {
					t.Fatal(err)
				}
			}

			up := newFake()
			c2 := wrap(t, up, cfg, Deps{})
			if tc.tornCut > 0 && !strings.Contains(c2.Stats().LastError, "torn") {
				t.Errorf("torn tail not reported: %q", c2.Stats().LastError)
			}
			if err := c2.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			testwait.Until(t, "replay after restart", func() bool { return c2.Stats().Length == 0 })
			got := up.delivered()
			if !equal(nums(got), tc.want) {
				t.Fatalf("replayed %v, want %v", nums(got), tc.want)
			}
			for _, m := range got {
				if !m.Resent {
					t.Fatalf("record %d not marked resent", num(m))
				}
			}
			// The restarted cache keeps working: the next record goes on
			// disk behind the replayed ones.
			up.setDown(true)
			mustWrite(t, c2, 100, 100)
			if s := c2.Stats(); s.DiskLength != 1 {
				t.Errorf("after restart, new record not cached on disk: %+v", s)
			}
		})
	}
}

// A crash in the middle of a replay redelivers nothing that the sink had
// already taken, and loses nothing.
func TestCrashDuringReplay(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, Sync: SyncNone, MemoryCacheThreshold: 4, BufferPageSize: 8, ResendInterval: time.Millisecond}
	first := newFake()
	c := wrap(t, first, cfg, Deps{})
	mustWrite(t, c, 1, 40) // not connected: all cached
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "partial replay", func() bool { return first.delivCount() >= 15 })
	abandon(c)
	before := nums(first.delivered())

	second := newFake()
	c2 := wrap(t, second, cfg, Deps{})
	if s := c2.Stats(); s.Length != 40-len(before) {
		t.Fatalf("reopened with %d records, want %d", s.Length, 40-len(before))
	}
	if err := c2.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "rest of the replay", func() bool { return c2.Stats().Length == 0 })
	all := append(before, nums(second.delivered())...)
	if !equal(all, seq(1, 40)) {
		t.Fatalf("delivered across the crash: %v", all)
	}
}

// A corrupt frame inside a segment (not a torn tail) costs only the records
// of that segment after it; they are counted as dropped.
func TestCorruptSegment(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, Sync: SyncNone, MemoryCacheThreshold: 2, BufferPageSize: 5}
	c := wrap(t, newFake(), cfg, Deps{})
	mustWrite(t, c, 1, 15) // segments 1-5, 6-10, 11-15
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*"+segSuffix))
	sort.Strings(segs)
	if len(segs) != 3 {
		t.Fatalf("want 3 segments, got %v", segs)
	}
	// Flip a byte in the third frame of the middle segment.
	b, err := os.ReadFile(segs[1])
	if err != nil {
		t.Fatal(err)
	}
	frame := len(b) / 5
	b[2*frame+frameHeader+3] ^= 0xff
	if err := os.WriteFile(segs[1], b, 0o644); err != nil {
		t.Fatal(err)
	}
	up := newFake()
	c2 := wrap(t, up, Config{Dir: dir, ResendInterval: time.Millisecond, MemoryCacheThreshold: 2, BufferPageSize: 5}, Deps{})
	if err := c2.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "replay", func() bool { return c2.Stats().Length == 0 })
	want := append(seq(1, 7), seq(11, 15)...)
	if got := nums(up.delivered()); !equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	if s := c2.Stats(); s.Dropped != 3 {
		t.Errorf("Dropped = %d, want 3", s.Dropped)
	}
}
