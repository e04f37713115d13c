package runtime

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/panics"
)

// passOp turns every data item into one result row; it panics on the row
// numbered panicAt (0 never).
type passOp struct {
	n, panicAt int
}

func (o *passOp) Name() string { return "pass" }

func (o *passOp) Process(_ *operator.Context, it operator.Item, emit operator.Emit) error {
	if it.Kind != operator.Data {
		return nil
	}
	o.n++
	if o.n == o.panicAt {
		var p *passOp
		_ = p.n // nil pointer dereference
	}
	emit(operator.Item{Kind: operator.Data, Results: []map[string]any{{"n": o.n}}})
	return nil
}

// collectSink records deliveries; it panics on delivery panicAt (0 never).
type collectSink struct {
	mu      sync.Mutex
	n       int
	panicAt int
}

func (s *collectSink) Name() string { return "collect" }

func (s *collectSink) Collect(_ context.Context, rows []map[string]any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if s.n == s.panicAt {
		panic("sink exploded")
	}
	return nil
}

func (s *collectSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// runPanicking sends more items than every buffer holds through a rule
// whose operator or sink panics, then stops it: the panic is reported once
// and nothing blocks (Send and Stop return).
func runPanicking(t *testing.T, op operator.Operator, sink Sink) *panics.Error {
	t.Helper()
	var mu sync.Mutex
	var got []*panics.Error
	r := New(Config{
		ID: "r", Ops: []operator.Operator{op}, Sinks: []Sink{sink}, Clock: clock.Wall{},
		BufferLength: 2,
		OnPanic: func(e *panics.Error) {
			mu.Lock()
			got = append(got, e)
			mu.Unlock()
		},
	})
	r.Start()
	for range 50 {
		r.Send(operator.Item{Kind: operator.Data})
	}
	r.Stop()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("OnPanic called %d times; want once", len(got))
	}
	return got[0]
}

func TestOperatorPanicIsReportedAndContained(t *testing.T) {
	sink := &collectSink{}
	e := runPanicking(t, &passOp{panicAt: 3}, sink)
	if !strings.HasPrefix(e.Error(), "panic: operator pass: runtime error: invalid memory address") {
		t.Errorf("error %q", e)
	}
	if !strings.Contains(string(e.Stack), "passOp") {
		t.Errorf("stack does not show the operator:\n%s", e.Stack)
	}
	if n := sink.count(); n != 2 {
		t.Errorf("sink got %d rows; want the 2 before the panic, none after", n)
	}
}

func TestSinkPanicIsReportedAndContained(t *testing.T) {
	sink := &collectSink{panicAt: 2}
	e := runPanicking(t, &passOp{}, sink)
	if e.Error() != "panic: sink collect: sink exploded" {
		t.Errorf("error %q", e)
	}
	if n := sink.count(); n != 2 {
		t.Errorf("sink called %d times; want 2 (nothing after its panic)", n)
	}
}

// failOp returns err for every data item.
type failOp struct{ err error }

func (o *failOp) Name() string { return "lookup" }

func (o *failOp) Process(_ *operator.Context, it operator.Item, emit operator.Emit) error {
	if it.Kind != operator.Data {
		return nil
	}
	return o.err
}

// failSink returns err for every delivery.
type failSink struct{ err error }

func (s *failSink) Name() string                                    { return "sql" }
func (s *failSink) Collect(context.Context, []map[string]any) error { return s.err }

// TestPanicsReturnedByConnectorsStopTheRule: a lookup source or a sink
// that recovered a panic on a goroutine of its own (a follower, a linger
// timer) returns it; the rule stops with that panic, origin and stack
// kept, as if it had panicked on the rule's goroutine.
func TestPanicsReturnedByConnectorsStopTheRule(t *testing.T) {
	origin := panics.Call("memory table follow", func() { panic("bad row") })
	wrapped := fmt.Errorf("lookup table t: %w", origin)
	t.Run("operator", func(t *testing.T) {
		if e := runPanicking(t, &failOp{err: wrapped}, &collectSink{}); e != origin {
			t.Errorf("rule stopped with %v; want the source's panic %v", e, origin)
		}
	})
	t.Run("sink", func(t *testing.T) {
		if e := runPanicking(t, &passOp{}, &failSink{err: wrapped}); e != origin {
			t.Errorf("rule stopped with %v; want the sink's panic %v", e, origin)
		}
	})
}
