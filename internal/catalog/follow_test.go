package catalog

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// changeLog collects what OnChange reports.
type changeLog struct {
	mu  sync.Mutex
	all []Change
}

func (l *changeLog) add(ch Change) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, ch)
}

func (l *changeLog) has(kind ChangeKind, deleted bool, key ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.all, func(ch Change) bool {
		return ch.Kind == kind && ch.Deleted == deleted && slices.Equal(ch.Key, key)
	})
}

// followNode opens a second node's catalog on url and follows it until the
// test ends.
func followNode(t *testing.T, url string, clk clock.Clock) (*Catalog, Store, *changeLog) {
	t.Helper()
	s := postgresBackend().openAt(t, url, nil)
	c := newCatalog(t, s)
	log := &changeLog{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Follow(ctx, FollowOptions{OnChange: log.add, Clock: clk}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return c, s, log
}

// waitListening returns once b has applied a write of a made after b was
// opened: b then listens, and its first reload after connecting is done.
// One write is enough: b's follower listens before that reload, so a write
// it does not hear of is one the reload reads.
func waitListening(t *testing.T, a, b *Catalog) {
	t.Helper()
	if _, err := a.PutConfKey(context.Background(), ConfKey{Category: ConfSink, Type: "mqtt", Key: "probe", Props: map[string]any{"n": int64(1)}}, Upsert); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "b to apply a's write", func() bool {
		k, err := b.ConfKey(ConfSink, "mqtt", "probe")
		return err == nil && k.Props["n"] == int64(1)
	})
}

// TestFollowSeesOtherNodesWrites: two catalogs over one database; every
// kind written on one shows on the other, deletes too, and the other's
// hook hears of each.
func TestFollowSeesOtherNodesWrites(t *testing.T) {
	ctx := context.Background()
	url := pgDatabase(t)
	a := newCatalog(t, postgresBackend().openAt(t, url, nil))
	aLog := &changeLog{}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	go a.Follow(actx, FollowOptions{OnChange: aLog.add}) //nolint:errcheck // ends with the test
	b, bStore, bLog := followNode(t, url, nil)

	waitListening(t, a, b)
	fillStore(t, &catalogStore{a})
	testwait.Until(t, "every kind on b", func() bool { return reflect.DeepEqual(memSnapshot(b), memSnapshot(a)) })
	assertMemoryMatchesDisk(t, b, bStore)
	if !bLog.has(ChangeRule, false, "r1") || !bLog.has(ChangeConfKey, false, "source", "mqtt", "demo_conf") {
		t.Errorf("b's hook did not hear of the rule or confKey: %+v", bLog.all)
	}

	if _, err := a.SetRuleState(ctx, "r1", RuleStopped); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteRule(ctx, "r2"); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "state and delete on b", func() bool {
		r, err := b.Rule("r1")
		_, gone := b.Rule("r2")
		return err == nil && r.State == RuleStopped && gone != nil
	})
	if !bLog.has(ChangeRule, true, "r2") {
		t.Errorf("b's hook did not hear of the delete: %+v", bLog.all)
	}

	// And the other way round.
	if _, err := b.PutStream(ctx, Stream{Name: "fromb", Kind: KindStream, SQL: "x"}, Create); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "b's stream on a", func() bool { _, err := a.Stream("fromb"); return err == nil })
	if bLog.has(ChangeStream, false, "fromb") {
		t.Error("b's hook heard of b's own write")
	}
}

// TestFollowReconcileRepairsLostNotification: a write that announced
// nothing is picked up by the periodic reconcile.
func TestFollowReconcileRepairsLostNotification(t *testing.T) {
	url := pgDatabase(t)
	a := newCatalog(t, postgresBackend().openAt(t, url, nil))
	seed(t, a)
	clk := clock.NewVirtual(t0)
	b, _, bLog := followNode(t, url, clk)
	waitListening(t, a, b)

	// Behind the catalog's back: no NOTIFY, as if it had been lost.
	raw := a.store
	execRaw(t, raw, `UPDATE rules SET state = 'stopped' WHERE id = ?`, "r1")
	execRaw(t, raw, `DELETE FROM streams WHERE name = ?`, "demo")
	execRaw(t, raw, `UPDATE catalog_version SET version = version + 1`)
	if r, _ := b.Rule("r1"); r.State != RuleRunning {
		t.Fatalf("b changed before the reconcile: %+v", r)
	}
	clk.AdvanceTo(t0+int64(10*time.Second/time.Millisecond), nil)
	testwait.Until(t, "reconcile", func() bool {
		r, _ := b.Rule("r1")
		_, gone := b.Stream("demo")
		return r.State == RuleStopped && gone != nil
	})
	if !bLog.has(ChangeRule, false, "r1") || !bLog.has(ChangeStream, true, "demo") {
		t.Errorf("reconcile changes not announced: %+v", bLog.all)
	}
	if bLog.has(ChangeConnection, false, "c1") {
		t.Errorf("reconcile announced an unchanged connection: %+v", bLog.all)
	}
}

// TestFollowSQLiteReturns: an unshared store has nothing to follow.
func TestFollowSQLiteReturns(t *testing.T) {
	s, _ := newStore(t)
	c := newCatalog(t, s)
	if err := c.Follow(context.Background(), FollowOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestChangeWellFormed(t *testing.T) {
	for _, tc := range []struct {
		ch   Change
		want bool
	}{
		{Change{}, true},
		{Change{Kind: ChangeRule, Key: []string{"r"}}, true},
		{Change{Kind: ChangeRule}, false},
		{Change{Kind: ChangeConfKey, Key: []string{"a", "b"}}, false},
		{Change{Kind: ChangeSchema, Key: []string{"a", "b"}}, true},
		{Change{Kind: "view", Key: []string{"a"}}, false},
	} {
		if got := tc.ch.wellFormed(); got != tc.want {
			t.Errorf("%+v wellFormed = %v", tc.ch, got)
		}
	}
}
