package checkpoint

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
	"github.com/rekuiper/rekuiper/internal/runtime"
)

// leases hands out the lease each simulated node holds, as the placer
// does.
type leases struct {
	mu     sync.Mutex
	node   string
	tokens map[string]int64
}

func (l *leases) Lease(rule string) (string, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	tok, ok := l.tokens[rule]
	if !ok {
		return "", 0, errors.New("not held here")
	}
	return l.node, tok, nil
}

func sharedOn(t *testing.T) *catalog.PostgresStore {
	t.Helper()
	db, err := catalog.OpenPostgres(context.Background(), pgtest.Start(t).NewDatabase(t), catalog.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// acquire takes the lease of rule for node in db and returns the node's
// view of the leases it holds.
func acquire(t *testing.T, db *catalog.PostgresStore, rule, node string) *leases {
	t.Helper()
	tok, ok, err := db.AcquireLease(context.Background(), rule, node, time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	return &leases{node: node, tokens: map[string]int64{rule: tok}}
}

// TestSharedStore: checkpoints saved by one node are restored, byte for
// byte, by the node that takes the rule's lease over; the first node's
// saves after that are refused by the database, even when its own view
// still names its old token.
func TestSharedStore(t *testing.T) {
	ctx := context.Background()
	db := sharedOn(t)
	leaseA := acquire(t, db, "r/1", "A")
	tokA := leaseA.tokens["r/1"]
	a := &Shared{Backend: db, Lease: leaseA.Lease, Keep: 2}
	for id := uint64(1); id <= 3; id++ {
		if _, err := a.Save(sample(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.MarkCommitted("r/1", 2); err != nil {
		t.Fatal(err)
	}

	// B takes the rule over (A's lease gone) and restores.
	if err := db.ReleaseLease(ctx, "r/1", "A", tokA); err != nil {
		t.Fatal(err)
	}
	b := &Shared{Backend: db, Lease: acquire(t, db, "r/1", "B").Lease, Keep: 2}
	if err := b.Check("r/1"); err != nil {
		t.Fatal(err)
	}
	got, err := b.Latest("r/1", "fp")
	if err != nil || !reflect.DeepEqual(got, sample(3)) {
		t.Fatalf("B restores %+v %v, want checkpoint 3", got, err)
	}
	if id, ok := b.Committed("r/1"); !ok || id != 2 {
		t.Fatalf("committed = %d %v, want 2", id, ok)
	}
	if cp, err := b.Load("r/1", "fp", 2); err != nil || !reflect.DeepEqual(cp, sample(2)) {
		t.Fatalf("load 2 = %+v %v", cp, err)
	}
	if _, err := b.Latest("r/1", "other"); !errors.Is(err, ErrMismatch) {
		t.Fatalf("another definition: %v, want ErrMismatch", err)
	}
	if _, err := b.Load("r/1", "fp", 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("pruned checkpoint 1: %v, want ErrNotFound", err)
	}
	if _, err := b.Latest("r/2", "fp"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rule without checkpoints: %v, want ErrNotFound", err)
	}

	// A still believes it holds the lease: the database refuses.
	if _, err := a.Save(sample(4)); !errors.Is(err, catalog.ErrLeaseLost) {
		t.Fatalf("A saves after B took over: %v, want ErrLeaseLost", err)
	}
	if err := a.MarkCommitted("r/1", 3); !errors.Is(err, catalog.ErrLeaseLost) {
		t.Fatalf("A marks after B took over: %v, want ErrLeaseLost", err)
	}
	if got, _ := b.Latest("r/1", "fp"); got == nil || got.ID != 3 {
		t.Fatalf("after A's refused save the latest is %+v", got)
	}
	// A node that knows it lost the lease does not ask the database.
	leaseA.mu.Lock()
	delete(leaseA.tokens, "r/1")
	leaseA.mu.Unlock()
	if _, err := a.Save(sample(4)); err == nil || errors.Is(err, catalog.ErrLeaseLost) {
		t.Fatalf("save without a lease: %v, want the lease's own error", err)
	}

	if err := b.Delete("r/1"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Latest("r/1", "fp"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

// TestSharedUnavailable: a database that does not answer is
// ErrUnavailable, not "no checkpoint", so a rule does not start without
// its state.
func TestSharedUnavailable(t *testing.T) {
	db := sharedOn(t)
	s := &Shared{Backend: db, Lease: (&leases{}).Lease}
	db.Close()
	if err := s.Check("r"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("check: %v, want ErrUnavailable", err)
	}
	if _, err := s.Latest("r", "fp"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("latest: %v, want ErrUnavailable", err)
	}
	if _, err := s.Load("r", "fp", 1); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("load: %v, want ErrUnavailable", err)
	}
}

// TestCoordinatorShared: the coordinator writes through Shared and marks
// the checkpoint committed there.
func TestCoordinatorShared(t *testing.T) {
	db := sharedOn(t)
	store := &Shared{Backend: db, Lease: acquire(t, db, "r", "A").Lease}
	vc := clock.NewVirtual(0)
	c := NewCoordinator(Config{RuleID: "r", Fingerprint: "fp", Interval: time.Second, Store: store, Clock: vc, Sinks: 1})
	c.SetSources(map[string]Injector{"src": &injector{c: c, key: "src"}}, nil, nil)
	c.Start()
	defer c.Stop()
	vc.AdvanceTo(1000, nil)
	c.OnSnapshot(&runtime.Snapshot{ID: 1, Ops: map[string][]byte{"0:window": {7}}, State: map[string][]byte{}})
	c.OnSinkAck(1, 0)
	if st := c.Stats(); st.Completed != 1 {
		t.Fatalf("stats %+v", st)
	}
	cp, err := store.Latest("r", "fp")
	if err != nil || cp.ID != 1 || cp.Ops["0:window"][0] != 7 || cp.Offsets["src"][0] != 1 {
		t.Fatalf("stored %+v %v", cp, err)
	}
	if id, ok := store.Committed("r"); !ok || id != 1 {
		t.Fatalf("committed %d %v", id, ok)
	}
}
