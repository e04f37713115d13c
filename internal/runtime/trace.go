package runtime

import (
	"fmt"

	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/tracing"
)

// tracer is the runtime's tracing state. Off, it costs the hot path one
// atomic load per item a source sends (Config.Trace.On) and one nil check
// per item an operator or sink takes (Item.Trace).
type tracer struct {
	// names are the span names of the operators ("<n>_<name>", as the
	// topology's "op_<n>_<name>") and sinks, built at first use.
	ops, sinks []string
	// absorbed[i] are the traces of records operator i took in without
	// emitting (rows a window holds), linked from the next trace it
	// starts itself. Operator goroutine only.
	absorbed [][]*tracing.Ctx
}

// sendSampled sends the sampled tuples of a stream's item one per item,
// each with its trace, and the others together, in their order. Items of
// tables (Input > 0) are not sampled.
func (r *Rule) sendSampled(it operator.Item) bool {
	if it.Input > 0 || it.Trace != nil {
		return r.send(it)
	}
	ts, from := it.Tuples, 0
	for i, t := range ts {
		ctx := r.cfg.Trace.Sample(t)
		if ctx == nil {
			continue
		}
		if from < i {
			it.Tuples = ts[from:i]
			if !r.send(it) {
				return false
			}
		}
		one := it
		one.Tuples, one.Trace = ts[i:i+1], ctx
		if !r.send(one) {
			return false
		}
		from = i + 1
	}
	if from == 0 {
		return r.send(it)
	}
	if from < len(ts) {
		it.Tuples = ts[from:]
		return r.send(it)
	}
	return true
}

// processTraced runs it through operator i inside a span. A traced item
// gets a child span of its trace, holding the data the operator received;
// the data the operator emits carries the span on. An untraced item (a
// timer tick, a watermark) that makes the operator emit data starts a new
// trace there, holding the data emitted and linked to the records the
// operator held.
func (r *Rule) processTraced(ctxs []*operator.Context, i int, it operator.Item) {
	if r.cfg.Trace == nil {
		r.run(ctxs, i, it, r.emits[i])
		return
	}
	t := &r.tracer
	if t.ops == nil {
		t.ops = make([]string, len(r.cfg.Ops))
		for j, op := range r.cfg.Ops {
			t.ops[j] = fmt.Sprintf("%d_%s", j+1, op.Name())
		}
		t.absorbed = make([][]*tracing.Ctx, len(r.cfg.Ops))
	}
	var span tracing.Span
	opened := it.Trace != nil
	if opened {
		span = r.cfg.Trace.Start(it.Trace, t.ops[i])
		span.SetData(itemData(it))
	}
	emitted := false
	r.run(ctxs, i, it, func(out operator.Item) {
		if out.Kind == operator.Data && out.Trace == nil {
			if !opened {
				span = r.cfg.Trace.Root(t.ops[i], t.absorbed[i])
				span.SetData(itemData(out))
				t.absorbed[i], opened = nil, true
			}
			out.Trace = span.Ctx()
		}
		emitted = emitted || out.Kind == operator.Data
		r.emits[i](out)
	})
	span.End()
	if it.Trace != nil && it.Kind == operator.Data && !emitted && len(t.absorbed[i]) < tracing.MaxLinks {
		t.absorbed[i] = append(t.absorbed[i], span.Ctx())
	}
}

// sinkSpan opens the span of sink i for a traced emission. Sink goroutine.
func (r *Rule) sinkSpan(i int, it *operator.Item) tracing.Span {
	span := r.cfg.Trace.Start(it.Trace, r.cfg.Sinks[i].Name())
	if it.Kind == operator.Data {
		rows := it.Results
		if it.Slots != nil {
			rows = it.Slots.Maps()
		}
		span.SetData(tracing.ResultsData(rows))
	}
	return span
}

// itemData is the data attribute of an item.
func itemData(it operator.Item) string {
	switch {
	case it.Slots != nil:
		return tracing.ResultsData(it.Slots.Maps())
	case it.Results != nil:
		return tracing.ResultsData(it.Results)
	case it.Set != nil:
		return tracing.SetData(it.Set)
	}
	return tracing.TuplesData(it.Tuples)
}
