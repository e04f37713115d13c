package conformance

import (
	"context"
	"fmt"
	"sync"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/engine"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/runtime"
)

// collector is the sink of a replay: it records emissions in order.
type collector struct {
	mu   sync.Mutex
	rows [][]map[string]any
}

func (c *collector) Name() string { return "collector" }

func (c *collector) Collect(_ context.Context, rows []map[string]any) error {
	c.mu.Lock()
	c.rows = append(c.rows, rows)
	c.mu.Unlock()
	return nil
}

// Replay runs case c with one option variant on a virtual clock and returns
// the emissions the rule produced (FORMAT.md §3).
func Replay(c *Case, variant map[string]any, funcs *function.Registry) ([][]map[string]any, error) {
	opts, err := rule.ParseOptions(rule.Options{}, variant)
	if err != nil {
		return nil, err
	}
	defs, err := engine.ParseDefs(c.Streams)
	if err != nil {
		return nil, err
	}
	vc := clock.NewVirtual(c.StartTime)
	tracker := runtime.NewTracker()
	sink := &collector{}
	id := c.Rule.ID
	if id == "" {
		id = "rule_" + c.Name
	}
	built, err := engine.Build(engine.Spec{
		ID: id, SQL: c.Rule.SQL, Options: opts, Defs: defs, Funcs: funcs,
		Clock: vc, Sinks: []runtime.Sink{sink}, Tracker: tracker,
	})
	if err != nil {
		return nil, err
	}
	ports := map[string]int{}
	for _, in := range built.Plan.Inputs {
		ports[in.Name] = in.Port
	}
	r := built.Rule
	r.Start()
	defer r.Stop()
	for name, rows := range c.Tables {
		tuples := make([]*row.Tuple, 0, len(rows))
		for _, data := range rows {
			m, _ := data.(map[string]any)
			tuples = append(tuples, &row.Tuple{Emitter: name, Message: m, Metadata: c.InputMetadata, Timestamp: c.StartTime})
		}
		r.Send(operator.Item{Kind: operator.Data, Input: ports[name], Tuples: tuples})
		tracker.Wait()
	}
	for _, step := range c.Timeline {
		vc.AdvanceTo(step.At, tracker.Wait)
		evs := c.Inputs[step.Stream]
		if step.Index >= len(evs) {
			return nil, fmt.Errorf("timeline refers to %s[%d], which does not exist", step.Stream, step.Index)
		}
		t := &row.Tuple{Emitter: step.Stream, Message: evs[step.Index].Data, Metadata: c.InputMetadata, Timestamp: step.At}
		r.Send(operator.Item{Kind: operator.Data, Input: ports[step.Stream], Tuples: []*row.Tuple{t}})
		tracker.Wait()
	}
	r.Stop()
	sink.mu.Lock()
	defer sink.mu.Unlock()
	return sink.rows, nil
}
