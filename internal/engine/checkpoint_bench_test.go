package engine

import (
	"fmt"
	"testing"

	"github.com/rekuiper/rekuiper/internal/checkpoint"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/runtime"
)

// openWindow builds the window rule and fills its open window with one row
// for each of keys distinct keys.
func openWindow(b *testing.B, keys int) (*Built, *runtime.Snapshot) {
	vc := clock.NewVirtual(0)
	var snap *runtime.Snapshot
	defs, _ := ParseDefs([]string{benchStream})
	built, err := Build(Spec{ID: "bench", SQL: windowSQL, Defs: defs, Funcs: function.Builtins(), Clock: vc,
		Sinks: []runtime.Sink{&countSink{}}, Tracker: runtime.NewTracker(),
		OnSnapshot: func(s *runtime.Snapshot) { snap = s }})
	if err != nil {
		b.Fatal(err)
	}
	tr := built.Rule
	tr.Start()
	const batch = 1000
	for i := 0; i < keys; i += batch {
		ts := make([]*row.Tuple, 0, batch)
		for j := i; j < i+batch && j < keys; j++ {
			ts = append(ts, &row.Tuple{Emitter: "s", Timestamp: 1, Message: map[string]any{
				"deviceId": fmt.Sprintf("dev%06d", j), "temperature": 21.5, "humidity": int64(j % 90), "status": "ok",
			}})
		}
		tr.Send(operator.Item{Kind: operator.Data, Tuples: ts})
	}
	tr.Send(operator.Item{Kind: operator.Barrier, Barrier: 1})
	tr.Stop()
	if snap == nil {
		b.Fatal("no snapshot")
	}
	return built, snap
}

// BenchmarkCheckpoint100kKeys measures taking, writing and restoring the
// checkpoint of a tumbling window holding rows of 100,000 distinct keys.
func BenchmarkCheckpoint100kKeys(b *testing.B) {
	const keys = 100000
	built, snap := openWindow(b, keys)
	win := built.Plan.Ops[windowIndex(built)].(operator.Stateful)
	store := &checkpoint.Store{Dir: b.TempDir()}
	size := 0
	for _, v := range snap.Ops {
		size += len(v)
	}
	b.Run("snapshot", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := win.Snapshot(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(size), "bytes")
	})
	b.Run("save", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			n, err := store.Save(&checkpoint.Checkpoint{ID: uint64(i + 1), RuleID: "bench", Fingerprint: "fp", Ops: snap.Ops, State: snap.State})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(n), "file-bytes")
		}
	})
	b.Run("restore", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			cp, err := store.Latest("bench", "fp")
			if err != nil {
				b.Fatal(err)
			}
			fresh, _ := openFresh(b)
			if err := fresh.Rule.Restore(&runtime.Snapshot{ID: cp.ID, Ops: cp.Ops, State: cp.State}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func openFresh(b *testing.B) (*Built, error) {
	defs, _ := ParseDefs([]string{benchStream})
	return Build(Spec{ID: "bench", SQL: windowSQL, Defs: defs, Funcs: function.Builtins(), Clock: clock.NewVirtual(0),
		Sinks: []runtime.Sink{&countSink{}}})
}
