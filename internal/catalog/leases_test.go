package catalog

import (
	"context"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

// TestLeases: a lease is granted to one node at a time, renewed only by
// its holder with its token, taken over once it expired by the database's
// clock with a larger token, and fenced: the old token is no longer
// current.
func TestLeases(t *testing.T) {
	ctx := context.Background()
	s := newPostgresStore(t)
	const long = time.Minute

	tokA, ok, err := s.AcquireLease(ctx, "r1", "A", long)
	if err != nil || !ok {
		t.Fatalf("A acquires a free lease: %v %v", ok, err)
	}
	if _, ok, err := s.AcquireLease(ctx, "r1", "B", long); err != nil || ok {
		t.Fatalf("B acquires A's live lease: %v %v", ok, err)
	}
	sum := RuleSummary{State: "running", LastStart: 1234}
	got, err := s.RenewLeases(ctx, "A", long, map[string]int64{"r1": tokA}, map[string]RuleSummary{"r1": sum})
	if err != nil || got["r1"] != tokA || len(got) != 1 {
		t.Fatalf("A renews r1: %v %v", got, err)
	}
	if got, err := s.RenewLeases(ctx, "B", long, map[string]int64{"r1": tokA}, nil); err != nil || len(got) != 0 {
		t.Fatalf("B renews A's lease: %v %v", got, err)
	}
	ls, err := s.Leases(ctx)
	if err != nil || len(ls) != 1 || ls[0] != (Lease{Rule: "r1", Node: "A", Token: tokA, Live: true, Summary: sum}) {
		t.Fatalf("leases = %+v %v", ls, err)
	}
	if cur, err := s.LeaseCurrent(ctx, "r1", "A", tokA); err != nil || !cur {
		t.Fatalf("A's token current: %v %v", cur, err)
	}
	if cur, _ := s.LeaseCurrent(ctx, "r1", "B", tokA); cur {
		t.Fatal("B passes the fence with A's token")
	}

	// A lets r2 expire; B takes it over.
	old, ok, err := s.AcquireLease(ctx, "r2", "A", 100*time.Millisecond)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	testwait.Until(t, "the 100ms lease to expire", func() bool {
		ls, err := s.Leases(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return !ls[1].Live
	})
	if cur, _ := s.LeaseCurrent(ctx, "r2", "A", old); cur {
		t.Fatal("an expired lease passes the fence")
	}
	tokB, ok, err := s.AcquireLease(ctx, "r2", "B", long)
	if err != nil || !ok || tokB <= old {
		t.Fatalf("B takes the expired lease: token %d after %d, %v %v", tokB, old, ok, err)
	}
	if got, err := s.RenewLeases(ctx, "A", long, map[string]int64{"r1": tokA, "r2": old}, nil); err != nil || len(got) != 1 || got["r1"] != tokA {
		t.Fatalf("A renews r1 and its lost r2: %v %v; want r1 only", got, err)
	}

	// A restarted node takes its own live lease back with a new token;
	// the old one is fenced.
	again, ok, err := s.AcquireLease(ctx, "r1", "A", long)
	if err != nil || !ok || again <= tokB {
		t.Fatalf("A takes its own lease back: %d %v %v", again, ok, err)
	}
	if cur, _ := s.LeaseCurrent(ctx, "r1", "A", tokA); cur {
		t.Fatal("the token of the previous grant passes the fence")
	}

	// Release needs the holder and its token.
	if err := s.ReleaseLease(ctx, "r2", "A", tokB); err != nil {
		t.Fatal(err)
	}
	if cur, _ := s.LeaseCurrent(ctx, "r2", "B", tokB); !cur {
		t.Fatal("a release by another node removed B's lease")
	}
	if err := s.ReleaseLease(ctx, "r2", "B", tokB); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.AcquireLease(ctx, "r2", "A", long); err != nil || !ok {
		t.Fatalf("A acquires a released lease: %v %v", ok, err)
	}
}
