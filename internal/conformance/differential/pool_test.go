package differential

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/rekuiper/rekuiper/internal/conformance"
	"github.com/rekuiper/rekuiper/internal/function"
)

// fakeOracle stands in for eKuiper: it answers every case from the case's
// name alone, so its answers never depend on the worker or the order. A
// third of the cases get rekuiper's own output (same), a third a refusal,
// a third an empty output (a difference unless rekuiper emits nothing).
// Cases named in vary answer differently on every run (eKuiper's
// variance). A batch whose input folder is named holdBatch waits until
// releaseAfter has run, so batches finish out of order.
type fakeOracle struct {
	funcs *function.Registry
	vary  map[string]bool
	// hidden cases emit nothing while errors are not sent, and are
	// refused for a documented quirk once they are.
	hidden       map[string]bool
	failBatch    string
	holdBatch    string
	releaseAfter string
	release      chan struct{}

	mu    sync.Mutex
	calls map[string]int
}

func (f *fakeOracle) Run(ctx context.Context, in, out string) error {
	batch := filepath.Base(in)
	if batch == f.failBatch {
		return errors.New("oracle crashed")
	}
	if batch == f.holdBatch {
		select {
		case <-f.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if batch == f.releaseAfter {
		defer close(f.release)
	}
	paths, err := conformance.Discover(in)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, p := range paths {
		c, err := conformance.Load(p)
		if err != nil {
			return err
		}
		f.mu.Lock()
		f.calls[c.ID()]++
		n := f.calls[c.ID()]
		f.mu.Unlock()
		h := fnv.New32a()
		h.Write([]byte(c.ID()))
		c.Expected = [][]map[string]any{}
		refuse := ""
		switch h.Sum32() % 3 {
		case 0:
			if actual, err := conformance.Replay(c, c.Rule.Options, f.funcs); err == nil {
				c.Expected = conformance.AsExpected(actual)
			} else {
				refuse = err.Error()
			}
		case 1:
			refuse = "plan: refused by the fake oracle"
		}
		if f.hidden[c.ID()] {
			c.Expected = [][]map[string]any{}
			refuse = ""
			if c.Rule.Options["sendError"] == true {
				refuse = `plan: Parse SQL error: found "-", expected expression..`
			}
		}
		if f.vary[c.ID()] {
			refuse = ""
			c.Expected = [][]map[string]any{{{"run": int64(n)}}}
		}
		data, err := EncodeCase(c)
		if err != nil {
			return err
		}
		if refuse != "" {
			var doc map[string]any
			if err := json.Unmarshal(data, &doc); err != nil {
				return err
			}
			delete(doc, "expected")
			doc["oracle_error"] = refuse
			if data, err = json.Marshal(doc); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(out, filepath.Base(p)), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

type verdict struct {
	id, kind, class string
}

// runPool compares the first n cases of seed in batches of size on workers
// fake oracles and returns the verdicts in the order done saw them and
// the batch order done was called in.
func runPool(t *testing.T, seed uint64, n, size, workers int, fake *fakeOracle) ([]verdict, []int, error) {
	t.Helper()
	g := NewGenerator(seed)
	var batches [][]*conformance.Case
	for done := 0; done < n; done += size {
		cs := make([]*conformance.Case, min(size, n-done))
		for i := range cs {
			cs[i] = g.Case()
		}
		batches = append(batches, cs)
	}
	p := &Pool{Funcs: fake.funcs, Work: t.TempDir(), Variance: true}
	for range workers {
		p.Oracles = append(p.Oracles, fake)
	}
	var got []verdict
	var order []int
	err := p.Run(context.Background(), batches, func(b int, outs []Outcome) {
		order = append(order, b)
		for _, o := range outs {
			got = append(got, verdict{o.Case.ID(), o.Kind.String(), o.Class})
		}
	})
	return got, order, err
}

func newFake(vary ...string) *fakeOracle {
	f := &fakeOracle{funcs: function.Builtins(), vary: map[string]bool{}, hidden: map[string]bool{}, calls: map[string]int{}, release: make(chan struct{})}
	for _, id := range vary {
		f.vary[id] = true
	}
	return f
}

// TestPoolShardingKeepsVerdicts: the same cases split over one worker or
// over several, in batches finishing out of order, give the same verdicts
// in the same order, each batch reported once and in order.
func TestPoolShardingKeepsVerdicts(t *testing.T) {
	const n, size = 60, 7
	one, order1, err := runPool(t, 3, n, size, 1, newFake())
	if err != nil {
		t.Fatal(err)
	}
	// With four workers, batch 1 is held until batch 4 has run.
	f := newFake()
	f.holdBatch, f.releaseAfter = "1", "4"
	four, order4, err := runPool(t, 3, n, size, 4, f)
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != n {
		t.Fatalf("one worker reported %d cases, want %d", len(one), n)
	}
	if !reflect.DeepEqual(one, four) {
		t.Fatalf("verdicts differ between one and four workers:\n%v\n%v", one, four)
	}
	want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	if !reflect.DeepEqual(order1, want) || !reflect.DeepEqual(order4, want) {
		t.Fatalf("batches reported in order %v and %v, want %v", order1, order4, want)
	}
	kinds := map[string]int{}
	for _, v := range one {
		kinds[v.kind]++
		if (v.kind == "same" || v.kind == "both-refused") != (v.class == "") {
			t.Errorf("%s: kind %s has class %q", v.id, v.kind, v.class)
		}
	}
	if kinds["same"] == 0 || kinds["ekuiper-refused"] == 0 || kinds["differs"]+kinds["rekuiper-refused"] == 0 {
		t.Fatalf("the fake oracle did not give every kind of outcome: %v", kinds)
	}
}

// TestPoolVariance: a case whose two oracle runs differ is eKuiper's
// variance; the others are not.
func TestPoolVariance(t *testing.T) {
	g := NewGenerator(3)
	first := g.Case().ID()
	got, _, err := runPool(t, 3, 20, 5, 2, newFake(first))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range got {
		if (v.id == first) != (v.class == Variance) {
			t.Errorf("%s: class %q", v.id, v.class)
		}
	}
}

// TestPoolStopsOnOracleFailure: an oracle that fails stops the run with
// its error, and no batch after it is reported.
func TestPoolStopsOnOracleFailure(t *testing.T) {
	f := newFake()
	f.failBatch = "3"
	_, order, err := runPool(t, 3, 60, 7, 3, f)
	if err == nil || !strings.Contains(err.Error(), "oracle crashed") || !strings.Contains(err.Error(), "batch 3") {
		t.Fatalf("err = %v, want the oracle's failure in batch 3", err)
	}
	for _, b := range order {
		if b >= 2 {
			t.Fatalf("batch %d reported after batch 3 failed (order %v)", b+1, order)
		}
	}
}

// TestPoolErrorsSent: a difference of a rule that does not send errors,
// unexplained as it is, is classified by its run with errors sent.
func TestPoolErrorsSent(t *testing.T) {
	funcs := function.Builtins()
	g := NewGenerator(3)
	target := ""
	for range 40 {
		c := g.Case()
		if c.Rule.Options["sendError"] != false {
			continue
		}
		if actual, err := conformance.Replay(c, c.Rule.Options, funcs); err == nil && len(actual) > 0 {
			target = c.ID()
			break
		}
	}
	if target == "" {
		t.Fatal("no case of seed 3 without sendError that rekuiper emits rows for")
	}
	f := newFake()
	f.hidden[target] = true
	got, _, err := runPool(t, 3, 40, 8, 2, f)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range got {
		if v.id == target && (v.kind != "differs" || v.class != "unary-minus") {
			t.Fatalf("%s: %s, class %q; want a difference classified by its run with errors sent", v.id, v.kind, v.class)
		}
	}
}
