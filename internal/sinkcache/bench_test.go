package sinkcache

import (
	"context"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

// BenchmarkSpill measures the cost per record of accepting it into the
// cache while the sink is down: encode, frame, write(2) (and fsync with
// SyncAlways).
func BenchmarkSpill(b *testing.B) {
	for _, sync := range []SyncPolicy{SyncNone, SyncPeriodic, SyncAlways} {
		b.Run("sync="+string(sync), func(b *testing.B) {
			c, err := Wrap(newFake(), Config{EnableCache: true, Dir: b.TempDir(), Sync: sync,
				MaxDiskCache: b.N + 1}, Deps{})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close(context.Background())
			m := msg(1)
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				if err := c.Write(ctx, m); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if s := c.Stats(); s.Length != b.N {
				b.Fatalf("cached %d of %d", s.Length, b.N)
			}
			b.ReportMetric(float64(c.Stats().DiskBytes)/float64(b.N), "disk-B/record")
		})
	}
}

// BenchmarkReplay measures how fast a backlog built during an outage drains
// into a sink that accepts everything, reading most records back from disk
// (the memory tier holds the first MemoryCacheThreshold only).
func BenchmarkReplay(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run("backlog="+itoa(n), func(b *testing.B) {
			var total time.Duration
			for range b.N {
				sink := newFake()
				sink.countOnly = true
				replayed := sink.reach(n)
				c, err := Wrap(sink, Config{EnableCache: true, Dir: b.TempDir(), Sync: SyncNone,
					MaxDiskCache: n + 1}, Deps{})
				if err != nil {
					b.Fatal(err)
				}
				m := msg(1)
				for range n {
					if err := c.Write(context.Background(), m); err != nil {
						b.Fatal(err)
					}
				}
				start := time.Now()
				if err := c.Connect(context.Background()); err != nil {
					b.Fatal(err)
				}
				select {
				case <-replayed:
				case <-time.After(testwait.Limit):
					b.Fatalf("replayed %d of %d records", sink.delivCount(), n)
				}
				total += time.Since(start)
				c.Close(context.Background())
			}
			b.ReportMetric(float64(n*b.N)/total.Seconds(), "records/s")
		})
	}
}

func itoa(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return itoa(n/1000) + "k"
	}
	var b []byte
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
