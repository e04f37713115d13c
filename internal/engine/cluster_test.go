package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/checkpoint"
	"github.com/rekuiper/rekuiper/internal/rule"
)

// unreachable is checkpoint storage whose database does not answer.
type unreachable struct {
	checkpoint.Storage
	check bool // Check answers too (only Latest fails)
}

func (u unreachable) Check(string) error {
	if u.check {
		return nil
	}
	return fmt.Errorf("%w: connection refused", checkpoint.ErrUnavailable)
}

func (u unreachable) Latest(string, string) (*checkpoint.Checkpoint, error) {
	return nil, fmt.Errorf("%w: connection refused", checkpoint.ErrUnavailable)
}

// qos1CountRule is a rule at qos 1 with a count window: it needs its
// checkpoints to start.
const qos1CountRule = `{"id":"r","sql":"SELECT count(*) AS c FROM s GROUP BY COUNTWINDOW(3)",
	"actions":[{"counting":{}}],"options":{"qos":1}}`

// TestRunnerUnavailableStorage: a rule at qos 1 whose checkpoint storage
// does not answer does not start without its state: its start waits for
// the storage until its context ends, then fails.
func TestRunnerUnavailableStorage(t *testing.T) {
	def := mustParseDef(t, qos1CountRule)
	for _, checkOK := range []bool{false, true} {
		t.Run(fmt.Sprintf("check_answers=%v", checkOK), func(t *testing.T) {
			e := newTestEnv(t)
			e.runner.cfg.Checkpoints = unreachable{Storage: e.runner.cfg.Checkpoints, check: checkOK}
			ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
			defer cancel()
			run, err := e.runner.Start(ctx, def)
			if err == nil {
				run.Stop(context.Background()) //nolint:errcheck // failing anyway
				t.Fatal("rule started without its checkpoints")
			}
			if !errors.Is(err, checkpoint.ErrUnavailable) {
				t.Fatalf("start: %v, want ErrUnavailable", err)
			}
		})
	}
}

// TestRunnerStateMovesBetweenNodes: two runners with their own data
// folders (two nodes) share one checkpoint storage. A count window half
// full on node A is restored on node B; the offset of A's local source
// log is recorded under A's id, so B does not rewind its own log to it.
func TestRunnerStateMovesBetweenNodes(t *testing.T) {
	a, b := newTestEnv(t), newTestEnv(t)
	shared := &checkpoint.Store{Dir: t.TempDir()}
	a.runner.cfg.Checkpoints, a.runner.cfg.ClusterNode = shared, "A"
	b.runner.cfg.Checkpoints, b.runner.cfg.ClusterNode = shared, "B"
	b.runner.cfg.Catalog = a.runner.cfg.Catalog
	def := a.stopWithHalfWindow(t)
	cp, err := shared.Latest("r", mustFingerprint(t, b.runner, def))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cp.Offsets["source:s@A"]; !ok || len(cp.Offsets) != 1 {
		t.Fatalf("offsets %v, want only source:s@A", keysOf(cp.Offsets))
	}

	b.startSubscribed(t, def, 1)
	b.publish(t, 20, 30)
	if msgs, _ := b.out.wait(t, 1); msgs[0] != `[{"c":3,"s":60}]` {
		t.Fatalf("window on B = %s, want A's 10 with 20 and 30", msgs[0])
	}
}

func mustFingerprint(t *testing.T, rn *Engine, def *rule.Def) string {
	t.Helper()
	p, err := rn.prepare(def)
	if err != nil {
		t.Fatal(err)
	}
	return p.fp
}

func keysOf(m map[string][]byte) []string { return sortedKeys(m) }

// flaky is checkpoint storage whose database answers from the third
// question on.
type flaky struct {
	checkpoint.Storage
	asked atomic.Int32
}

func (f *flaky) Check(string) error {
	if f.asked.Add(1) < 3 {
		return fmt.Errorf("%w: connection refused", checkpoint.ErrUnavailable)
	}
	return nil
}

// TestRunnerWaitsForStorage: a start during a short outage of the
// checkpoint storage waits for it and then runs.
func TestRunnerWaitsForStorage(t *testing.T) {
	def := mustParseDef(t, qos1CountRule)
	e := newTestEnv(t)
	f := &flaky{Storage: e.runner.cfg.Checkpoints}
	e.runner.cfg.Checkpoints = f
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := e.runner.Start(ctx, def)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Stop(context.Background()) //nolint:errcheck // end of test
	if n := f.asked.Load(); n != 3 {
		t.Fatalf("storage asked %d times, want 3", n)
	}
}
