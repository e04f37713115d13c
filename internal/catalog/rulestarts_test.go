package catalog

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

// TestRuleStartMarkersSurviveReopen: a marker written and not cleared is
// there after the store is reopened (as after kill -9); a cleared one is
// not. A batch of changes applies in order.
// Markers belong to their node: another node's are neither read nor
// cleared.
func TestRuleStartMarkersSurviveReopen(t *testing.T) {
	forEachBackend(t, testRuleStartMarkers)
}

func testRuleStartMarkers(t *testing.T, b backend) {
	ctx := context.Background()
	s, target := b.fresh(t)
	m := core(t, s)
	at := time.UnixMilli(t0).UTC()
	// One transaction per node, applied in order: n1's d is marked then
	// cleared, its e cleared then marked.
	n1 := []RuleStart{{ID: "a", At: at}, {ID: "b", At: at}, {ID: "d", At: at}, {ID: "d", Clear: true},
		{ID: "e", Clear: true}, {ID: "e", At: at}}
	if err := m.WriteRuleStarts(ctx, "n1", n1); err != nil {
		t.Fatal(err)
	}
	n2 := []RuleStart{{ID: "b", At: at.Add(time.Second)}, {ID: "c", At: at.Add(time.Second)}}
	if err := m.WriteRuleStarts(ctx, "n2", n2); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteRuleStarts(ctx, "n1", []RuleStart{{ID: "b", Clear: true}, {ID: "e", Clear: true}, {ID: "never-marked", Clear: true}}); err != nil {
		t.Fatalf("clearing (one marker absent): %v", err)
	}
	if err := m.WriteRuleStarts(ctx, "n1", nil); err != nil {
		t.Fatalf("no changes: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := New(ctx, b.openAt(t, target, nil))
	if err != nil {
		t.Fatal(err)
	}
	marks, err := c.RuleStartMarks(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if len(marks) != 1 || !marks["a"].Equal(at) {
		t.Fatalf("n1's markers after reopen = %v; want only a at %v", marks, at)
	}
	marks, err = c.RuleStartMarks(ctx, "n2")
	if err != nil {
		t.Fatal(err)
	}
	if len(marks) != 2 || !marks["b"].Equal(at.Add(time.Second)) || !marks["c"].Equal(at.Add(time.Second)) {
		t.Fatalf("n2's markers after reopen = %v; want b and c, untouched by n1", marks)
	}
}

// queueStarts calls WriteRuleStarts from a goroutine for each batch while
// the test holds the write lock, and returns once all are queued; their
// results come on the returned channel.
func queueStarts(t *testing.T, s *sqlStore, ctx context.Context, batches ...[]RuleStart) <-chan error {
	t.Helper()
	errs := make(chan error, len(batches))
	for _, b := range batches {
		go func() { errs <- s.WriteRuleStarts(ctx, "n1", b) }()
	}
	testwait.Until(t, "every batch to be queued", func() bool {
		s.startsMu.Lock()
		defer s.startsMu.Unlock()
		return len(s.starts) == len(batches)
	})
	return errs
}

// TestRuleStartMarkersGroupCommit: marker writes queued while the write
// lock is held are committed together by the next transaction: the first
// of their own when no other write comes, or a content write that takes
// the lock first. A transaction that fails before committing carries
// none; a caller that gives up before its marker was taken leaves nothing
// behind.
func TestRuleStartMarkersGroupCommit(t *testing.T) {
	forEachBackend(t, testRuleStartMarkersGroupCommit)
}

func testRuleStartMarkersGroupCommit(t *testing.T, b backend) {
	ctx := context.Background()
	st, _ := b.fresh(t)
	s := core(t, st)
	at := time.UnixMilli(t0).UTC()
	marks := func() map[string]time.Time {
		t.Helper()
		m, err := s.RuleStartMarks(ctx, "n1")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	content := func(tx stmts) error { // a write of catalog content
		_, err := tx.ExecContext(ctx, `UPDATE catalog_version SET version = version + 1`)
		return err
	}
	wait := func(errs <-chan error, n int) {
		t.Helper()
		for range n {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}

	t.Run("queued markers share one transaction", func(t *testing.T) {
		const n = 40
		batches := make([][]RuleStart, n)
		for i := range batches {
			batches[i] = []RuleStart{{ID: fmt.Sprintf("r%d", i), At: at}}
		}
		s.mu.Lock()
		before := s.commits.Load()
		errs := queueStarts(t, s, ctx, batches...)
		s.mu.Unlock()
		wait(errs, n)
		if got := s.commits.Load() - before; got != 1 {
			t.Fatalf("%d transactions for %d queued marker writes; want 1", got, n)
		}
		if m := marks(); len(m) != n || !m["r0"].Equal(at) {
			t.Fatalf("%d markers after the commit; want %d", len(m), n)
		}
	})

	t.Run("a content write carries them", func(t *testing.T) {
		s.mu.Lock()
		before := s.commits.Load()
		errs := queueStarts(t, s, ctx, []RuleStart{{ID: "r0", Clear: true}}, []RuleStart{{ID: "x", At: at}})
		err := s.txLocked(ctx, content)
		s.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		wait(errs, 2)
		if got := s.commits.Load() - before; got != 1 {
			t.Fatalf("%d transactions; want the content write's alone", got)
		}
		if m := marks(); !m["x"].Equal(at) || !m["r0"].IsZero() {
			t.Fatalf("markers after the content write: %v", m)
		}
	})

	t.Run("queued before a write, rides on it; dropped, never written", func(t *testing.T) {
		before := s.commits.Load()
		q := s.QueueRuleStarts("n1", []RuleStart{{ID: "q", At: at}})
		dropped := s.QueueRuleStarts("n1", []RuleStart{{ID: "dropped", At: at}})
		if !dropped.Drop() {
			t.Fatal("a queued marker could not be dropped before any transaction")
		}
		if err := s.tx(ctx, content); err != nil {
			t.Fatal(err)
		}
		if q.Drop() {
			t.Fatal("a marker taken by a transaction was dropped")
		}
		if err := q.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if got := s.commits.Load() - before; got != 1 {
			t.Fatalf("%d transactions; want the content write's alone", got)
		}
		if m := marks(); !m["q"].Equal(at) || !m["dropped"].IsZero() {
			t.Fatalf("markers: %v; want q and not dropped", m)
		}
	})

	t.Run("a failed transaction carries none", func(t *testing.T) {
		s.mu.Lock()
		errs := queueStarts(t, s, ctx, []RuleStart{{ID: "y", At: at}})
		failed := errors.New("refused")
		if err := s.txLocked(ctx, func(stmts) error { return failed }); !errors.Is(err, failed) {
			t.Fatalf("failing write: %v", err)
		}
		s.mu.Unlock()
		wait(errs, 1)
		if !marks()["y"].Equal(at) {
			t.Fatal("a marker queued behind a failed transaction was lost")
		}
	})

	t.Run("a caller that gives up leaves nothing", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		s.mu.Lock()
		errs := queueStarts(t, s, cctx, []RuleStart{{ID: "z", At: at}})
		cancel()
		s.mu.Unlock()
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Fatalf("write of a canceled caller: %v", err)
		}
		if err := s.WriteRuleStarts(ctx, "n1", []RuleStart{{ID: "w", At: at}}); err != nil {
			t.Fatal(err)
		}
		if m := marks(); !m["z"].IsZero() || !m["w"].Equal(at) {
			t.Fatalf("markers: %v; want w and no z", m)
		}
	})
}
