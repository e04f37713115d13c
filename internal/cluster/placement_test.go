package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/clock"
)

// hangingLeaser answers its first renewal and hangs on the later ones
// until released, as a database behind a cut connection does.
type hangingLeaser struct {
	catalog.Leaser // not called
	mu             sync.Mutex
	renewals       int
	hung           chan struct{} // closed when a renewal hangs
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
	if n == 2 {
		close(h.hung)
	}
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return nil, context.DeadlineExceeded
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
	store := &hangingLeaser{hung: make(chan struct{}), release: make(chan struct{})}
	defer close(store.release)
	p := NewPlacer(PlacerConfig{Node: "a", Store: store, LeaseTime: 30 * time.Second, Clock: clk})
	p.held["r"] = &lease{token: 1, until: clk.Now().Add(30 * time.Second)}
	rules := &unplaceRecorder{unplaced: make(chan string, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { p.renewLoop(ctx, rules, &wg) })
	wg.Go(func() { p.fenceLoop(ctx, rules, &wg) })

	// The first renewal (at once) succeeds: the lease runs until +30s.
	// The next, a third of the lease time later, hangs.
	until := clk.Now().Add(30 * time.Second)
	for at := clk.Now(); ; {
		select {
		case <-store.hung:
		default:
			at = at.Add(time.Second)
			clk.AdvanceTo(at.UnixMilli(), nil)
			time.Sleep(time.Millisecond)
			continue
		}
		break
	}
	// Time passes while the renewal hangs, up to just before the lease
	// expires: the rule is stopped within that time.
	deadline := time.Now().Add(20 * time.Second)
	for at := clk.Now(); at.Before(until); {
		select {
		case id := <-rules.unplaced:
			if id != "r" {
				t.Fatalf("unplaced %q, want r", id)
			}
			if p.Holds("r") {
				t.Fatal("the placer still holds the fenced lease")
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no progress")
		}
		at = at.Add(100 * time.Millisecond)
		clk.AdvanceTo(at.UnixMilli(), nil)
		time.Sleep(time.Millisecond)
	}
	select {
	case <-rules.unplaced:
	case <-time.After(2 * time.Second):
		t.Fatal("the rule was not stopped before its lease expired: fencing waited for the hanging renewal")
	}
	t.Fatal("the rule was stopped only once the lease had expired")
}
