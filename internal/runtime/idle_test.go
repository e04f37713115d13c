package runtime

import (
	"testing"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/operator"
)

func idleRule(op operator.Operator, sink *collectSink) *Rule {
	return New(Config{ID: "r", Ops: []operator.Operator{op}, Sinks: []Sink{sink}, Clock: clock.Wall{}, BufferLength: 4})
}

// TestIdleRuleLaunchesWithFirstItem: a started rule holds no channels and
// runs no goroutines until its first item, which it then processes.
func TestIdleRuleLaunchesWithFirstItem(t *testing.T) {
	sink := &collectSink{}
	r := idleRule(&passOp{}, sink)
	r.Start()
	if r.launched.Load() || r.in != nil || r.sinkIn != nil {
		t.Fatal("started rule launched before its first item")
	}
	if n := r.OpMetrics[0].BufferLength(); n != 0 {
		t.Errorf("idle buffer length %d", n)
	}
	if !r.Send(operator.Item{Kind: operator.Data}) {
		t.Fatal("first item refused")
	}
	if !r.launched.Load() {
		t.Fatal("rule not launched by its first item")
	}
	r.Stop()
	if n := sink.count(); n != 1 {
		t.Errorf("sink got %d rows; want 1", n)
	}
}

// TestIdleRuleStops: a rule stopped before any item stops at once, never
// launches, and refuses items afterwards.
func TestIdleRuleStops(t *testing.T) {
	sink := &collectSink{}
	r := idleRule(&passOp{}, sink)
	r.Start()
	r.Stop()
	if r.Send(operator.Item{Kind: operator.Data}) {
		t.Error("item accepted after Stop")
	}
	if r.launched.Load() {
		t.Error("stopped rule launched")
	}
	if n := sink.count(); n != 0 {
		t.Errorf("sink got %d rows after Stop", n)
	}
}

type startingOp struct {
	passOp
	started bool
}

func (o *startingOp) Start(*operator.Context) { o.started = true }

// TestStarterLaunchesAtStart: an operator that acts at start (a
// processing-time window arming its first timer) runs before Start returns.
func TestStarterLaunchesAtStart(t *testing.T) {
	op := &startingOp{}
	r := idleRule(op, &collectSink{})
	r.Start()
	defer r.Stop()
	if !r.launched.Load() || !op.started {
		t.Errorf("launched %v, operator started %v; want both at Start", r.launched.Load(), op.started)
	}
}
