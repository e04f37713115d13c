package catalog

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

// TestCheckpointStore: checkpoints are stored and read back by rule, task
// and id; older ones are pruned except the committed one; a write under a
// token that is not the rule's live lease is refused by the database.
func TestCheckpointStore(t *testing.T) {
	ctx := context.Background()
	s := newPostgresStore(t)
	tok, ok, err := s.AcquireLease(ctx, "r1", "A", time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	for id := uint64(1); id <= 4; id++ {
		if err := s.PutCheckpoint(ctx, "r1", "", id, "A", tok, []byte{byte(id), 0, 0xff}, 2); err != nil {
			t.Fatalf("put %d: %v", id, err)
		}
		if id == 2 {
			if err := s.MarkCheckpointCommitted(ctx, "r1", "", 2, "A", tok); err != nil {
				t.Fatal(err)
			}
		}
	}
	ids, err := s.CheckpointIDs(ctx, "r1", "")
	if err != nil || !slices.Equal(ids, []uint64{4, 3, 2}) {
		t.Fatalf("ids = %v %v, want [4 3 2] (2 kept: committed)", ids, err)
	}
	if b, err := s.Checkpoint(ctx, "r1", "", 3); err != nil || !bytes.Equal(b, []byte{3, 0, 0xff}) {
		t.Fatalf("checkpoint 3 = %v %v", b, err)
	}
	if _, err := s.Checkpoint(ctx, "r1", "", 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("pruned checkpoint 1: %v, want ErrNotFound", err)
	}
	if id, ok, err := s.CommittedCheckpoint(ctx, "r1", ""); err != nil || !ok || id != 2 {
		t.Fatalf("committed = %d %v %v, want 2", id, ok, err)
	}
	if ids, err := s.CheckpointIDs(ctx, "r1", "p1"); err != nil || len(ids) != 0 {
		t.Fatalf("another task's ids = %v %v", ids, err)
	}

	// A node without the lease, and the holder with a stale token, are
	// refused; nothing changes.
	if err := s.PutCheckpoint(ctx, "r1", "", 5, "B", tok, []byte{5}, 2); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("B writes under A's lease: %v, want ErrLeaseLost", err)
	}
	if err := s.PutCheckpoint(ctx, "r1", "", 5, "A", tok-1, []byte{5}, 2); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("A writes with a stale token: %v, want ErrLeaseLost", err)
	}
	if err := s.MarkCheckpointCommitted(ctx, "r1", "", 4, "B", tok); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("B marks under A's lease: %v, want ErrLeaseLost", err)
	}
	if ids, _ := s.CheckpointIDs(ctx, "r1", ""); !slices.Equal(ids, []uint64{4, 3, 2}) {
		t.Fatalf("after refused writes ids = %v", ids)
	}

	// The lease expires and B takes it: A's token is fenced, B's works.
	if err := s.ReleaseLease(ctx, "r1", "A", tok); err != nil {
		t.Fatal(err)
	}
	tokB, ok, err := s.AcquireLease(ctx, "r1", "B", time.Minute)
	if err != nil || !ok || tokB <= tok {
		t.Fatalf("B acquires: %d %v %v", tokB, ok, err)
	}
	if err := s.PutCheckpoint(ctx, "r1", "", 5, "A", tok, []byte{5}, 2); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("A writes after B took the lease: %v, want ErrLeaseLost", err)
	}
	if err := s.PutCheckpoint(ctx, "r1", "", 5, "B", tokB, []byte{5}, 2); err != nil {
		t.Fatal(err)
	}

	// A partitioned rule's tasks checkpoint under their own ids
	// ("r1#p0", "r1#r0" for its repartitioning stage); deleting the rule
	// removes them, not those of a rule whose id merely starts alike
	// ("r1x").
	for _, id := range []string{"r1#p0", "r1#r0", "r1x"} {
		tk, ok, err := s.AcquireLease(ctx, id, "B", time.Minute)
		if err != nil || !ok {
			t.Fatalf("acquire %s: %v %v", id, ok, err)
		}
		if err := s.PutCheckpoint(ctx, id, "", 1, "B", tk, []byte{1}, 2); err != nil {
			t.Fatalf("put %s: %v", id, err)
		}
	}
	if err := s.DeleteCheckpoints(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r1#p0", "r1#r0"} {
		if ids, _ := s.CheckpointIDs(ctx, id, ""); len(ids) != 0 {
			t.Fatalf("checkpoints of task %s after the rule's delete: %v", id, ids)
		}
	}
	if ids, _ := s.CheckpointIDs(ctx, "r1x", ""); !slices.Equal(ids, []uint64{1}) {
		t.Fatalf("another rule's checkpoints after r1's delete: %v", ids)
	}
	if ids, _ := s.CheckpointIDs(ctx, "r1", ""); len(ids) != 0 {
		t.Fatalf("after delete ids = %v", ids)
	}
	if _, ok, _ := s.CommittedCheckpoint(ctx, "r1", ""); ok {
		t.Fatal("commit mark survives delete")
	}
}

// TestCheckpointFenceRace: while one node writes checkpoints as fast as
// it can, another takes the lease over; after the grant committed, no
// write of the old holder lands.
func TestCheckpointFenceRace(t *testing.T) {
	ctx := context.Background()
	s := newPostgresStore(t)
	tokA, ok, err := s.AcquireLease(ctx, "r", "A", 300*time.Millisecond)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		stamped []uint64 // ids A's writes returned success for
		refused int
	)
	stop := make(chan struct{})
	wg.Go(func() {
		for id := uint64(1); ; id++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.PutCheckpoint(ctx, "r", "", id, "A", tokA, []byte("a"), 1000); err == nil {
				mu.Lock()
				stamped = append(stamped, id)
				mu.Unlock()
			} else if errors.Is(err, ErrLeaseLost) {
				mu.Lock()
				refused++
				mu.Unlock()
			} else {
				t.Errorf("put %d: %v", id, err)
				return
			}
		}
	})
	var tokB int64
	testwait.Until(t, "B to get the expired lease", func() bool {
		if tokB, ok, err = s.AcquireLease(ctx, "r", "B", time.Minute); err != nil {
			t.Fatal(err)
		}
		return ok
	})
	// Everything in the table now was written before the grant.
	before, err := s.CheckpointIDs(ctx, "r", "")
	if err != nil {
		t.Fatal(err)
	}
	// A keeps trying: wait for some refusals after the grant.
	mu.Lock()
	base := refused
	mu.Unlock()
	testwait.Until(t, "A's writes after the grant to be refused", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return refused-base >= 5
	})
	close(stop)
	wg.Wait()
	after, err := s.CheckpointIDs(ctx, "r", "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) {
		t.Fatalf("A wrote after B's grant (token %d): before %v, after %v", tokB, before[:min(3, len(before))], after[:min(3, len(after))])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(stamped) == 0 || len(after) != len(stamped) {
		t.Fatalf("A's acknowledged writes %d, rows %d", len(stamped), len(after))
	}
}
