package rulemgr

import (
	"testing"
	"time"
)

// TestSettleDelay: a run's marker is cleared settle after its start,
// rounded up to the next whole second of the clock.
func TestSettleDelay(t *testing.T) {
	base := time.UnixMilli(1_700_000_000_000) // a whole second
	for _, c := range []struct {
		startMs int64
		settle  time.Duration
		want    time.Duration
	}{
		{0, 5 * time.Second, 5 * time.Second},
		{1, 5 * time.Second, 5*time.Second + 999*time.Millisecond},
		{999, 5 * time.Second, 5*time.Second + time.Millisecond},
		{1000, 5 * time.Second, 5 * time.Second},
		{250, 1500 * time.Millisecond, 1750 * time.Millisecond},
	} {
		start := base.Add(time.Duration(c.startMs) * time.Millisecond)
		if got := settleDelay(start, c.settle); got != c.want {
			t.Errorf("settleDelay(+%dms, %v) = %v; want %v", c.startMs, c.settle, got, c.want)
		}
	}
}
