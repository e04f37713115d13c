package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// hangingLeaser answers its first renewal and hangs on the later ones
// until released, as a database behind a cut connection does.
type hangingLeaser struct {
	catalog.Leaser // not called
	mu             sync.Mutex
	renewals       int
	gaveUp         bool // a hanging renewal returned
	release        chan struct{}
}

func (h *hangingLeaser) RenewLeases(ctx context.Context, _ string, _ time.Duration, held map[string]int64, _ map[string]catalog.RuleSummary) (map[string]int64, error) {
	h.mu.Lock()
	h.renewals++
	n := h.renewals
	h.mu.Unlock()
	if n == 1 {
		return held, nil
	}
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	h.mu.Lock()
	h.gaveUp = true
	h.mu.Unlock()
	return nil, context.DeadlineExceeded
}

// hanging reports whether a renewal hangs now.
func (h *hangingLeaser) hanging() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.renewals >= 2 && !h.gaveUp
}

type unplaceRecorder struct {
	unplaced chan string
}

func (u *unplaceRecorder) Place(string) {}
func (u *unplaceRecorder) Unplace(_ context.Context, id string) error {
	u.unplaced <- id
	return nil
}
func (u *unplaceRecorder) Summary(string) (catalog.RuleSummary, bool) {
	return catalog.RuleSummary{}, false
}

// TestFencingDoesNotWaitForARenewal: a node whose lease renewal hangs on
// the database stops the rule before the lease may expire, while the
// renewal still hangs (fencing waited for the renewal to give up before,
// up to a third of the lease time per try, and could stop the rule after
// another node had taken it).
func TestFencingDoesNotWaitForARenewal(t *testing.T) {
	clk := clock.NewVirtual(1_000_000)
	store := &hangingLeaser{release: make(chan struct{})}
	defer close(store.release)
	p := NewPlacer(PlacerConfig{Node: "a", Store: store, LeaseTime: 30 * time.Second, Clock: clk})
	p.held["r"] = &lease{token: 1, until: clk.Now().Add(30 * time.Second)}
	rules := &unplaceRecorder{unplaced: make(chan string, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { p.renewLoop(ctx, rules, &wg) })
	wg.Go(func() { p.fenceLoop(ctx, rules, &wg) })

	// Each loop waits on the clock between its rounds: time moves on once
	// the ones not stuck in a renewal are back there (a firing takes its
	// timer off the clock until the loop sleeps again).
	idle := func(loops int) bool { return clk.Pending() == loops }

	// The first renewal (at once) succeeds: the lease runs until +30s.
	// The next, a third of the lease time later, hangs.
	until := clk.Now().Add(30 * time.Second)
	for at := clk.Now(); ; {
		testwait.Until(t, "both loops to wait on the clock, or the renewal to hang", func() bool { return idle(2) || store.hanging() })
		if store.hanging() {
			break
		}
		at = at.Add(time.Second)
		clk.AdvanceTo(at.UnixMilli(), nil)
	}
	// Time passes while the renewal hangs, up to just before the lease
	// expires: the rule is stopped within that time, the renewal still
	// hanging.
	fenced := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.held["r"] == nil
	}
	for at := clk.Now(); ; {
		testwait.Until(t, "the fence loop to wait on the clock, or the renewal to give up", func() bool { return idle(1) || !store.hanging() })
		if !store.hanging() {
			t.Fatal("the hanging renewal gave up before the rule was stopped: fencing waited for it")
		}
		if fenced() {
			break
		}
		if !at.Before(until) {
			t.Fatal("the rule was not stopped before its lease expired")
		}
		at = at.Add(100 * time.Millisecond)
		clk.AdvanceTo(at.UnixMilli(), nil)
	}
	if !clk.Now().Before(until) {
		t.Fatal("the rule was stopped only once the lease had expired")
	}
	select {
	case id := <-rules.unplaced:
		if id != "r" {
			t.Fatalf("unplaced %q, want r", id)
		}
	case <-time.After(testwait.Limit):
		t.Fatal("the fenced rule was not stopped")
	}
	if p.Holds("r") {
		t.Fatal("the placer still holds the fenced lease")
	}
}
