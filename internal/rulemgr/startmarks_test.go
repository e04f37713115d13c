package rulemgr

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
)

// gatedStore records each marker transaction; while gate is set, the next
// one waits on it (entered says it is waiting). fail makes them fail.
type gatedStore struct {
	*catalog.SQLiteStore
	mu      sync.Mutex
	batches [][]catalog.RuleStart
	gate    chan struct{}
	entered chan struct{}
	fail    error
}

func (g *gatedStore) WriteRuleStarts(ctx context.Context, node string, changes []catalog.RuleStart) error {
	g.mu.Lock()
	g.batches = append(g.batches, slices.Clone(changes))
	gate, fail := g.gate, g.fail
	g.gate = nil
	g.mu.Unlock()
	if gate != nil {
		close(g.entered)
		<-gate
	}
	if fail != nil {
		return fail
	}
	return g.SQLiteStore.WriteRuleStarts(ctx, node, changes)
}

func newGated(t *testing.T) (*gatedStore, *catalog.Catalog, *startMarks) {
	t.Helper()
	ctx := context.Background()
	st, err := catalog.Open(ctx, filepath.Join(t.TempDir(), "sqliteKV.db"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g := &gatedStore{SQLiteStore: st}
	cat, err := catalog.New(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	return g, cat, &startMarks{cat: cat, node: "n1", timeout: 10 * time.Second}
}

// TestStartMarksGroupCommit: markers requested while a transaction is in
// flight all go into the next one, in request order, and each caller
// returns once its marker is committed.
func TestStartMarksGroupCommit(t *testing.T) {
	g, cat, w := newGated(t)
	gate := make(chan struct{})
	g.gate, g.entered = gate, make(chan struct{})
	at := time.UnixMilli(1_700_000_000_000).UTC()
	first := make(chan error, 1)
	go func() { first <- w.write(catalog.RuleStart{ID: "r0", At: at}) }()
	<-g.entered

	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- w.write(catalog.RuleStart{ID: fmt.Sprintf("r%d", i), At: at})
		}()
	}
	for queued := 0; queued < n; {
		w.mu.Lock()
		queued = len(w.pending)
		w.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	close(gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(g.batches) != 2 || len(g.batches[0]) != 1 || len(g.batches[1]) != n {
		sizes := make([]int, len(g.batches))
		for i, b := range g.batches {
			sizes[i] = len(b)
		}
		t.Fatalf("transactions of %v markers; want 2: 1, then the %d queued behind it", sizes, n)
	}
	marks, err := cat.RuleStartMarks(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if len(marks) != n+1 || !marks["r0"].Equal(at) || !marks[fmt.Sprintf("r%d", n)].Equal(at) {
		t.Fatalf("%d markers committed; want %d", len(marks), n+1)
	}
}

// TestStartMarksOrderAndErrors: one caller's mark then clear leave no
// marker; a failed transaction's error reaches its caller.
func TestStartMarksOrderAndErrors(t *testing.T) {
	g, cat, w := newGated(t)
	ctx := context.Background()
	if err := w.write(catalog.RuleStart{ID: "a", At: time.UnixMilli(1)}); err != nil {
		t.Fatal(err)
	}
	if err := w.write(catalog.RuleStart{ID: "a", Clear: true}); err != nil {
		t.Fatal(err)
	}
	if marks, err := cat.RuleStartMarks(ctx, "n1"); err != nil || len(marks) != 0 {
		t.Fatalf("markers after mark and clear: %v, %v", marks, err)
	}
	disk := errors.New("disk I/O error")
	g.mu.Lock()
	g.fail = disk
	g.mu.Unlock()
	if err := w.write(catalog.RuleStart{ID: "b", At: time.UnixMilli(1)}); !errors.Is(err, disk) {
		t.Fatalf("write during a failure: %v; want %v", err, disk)
	}
}
