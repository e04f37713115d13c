package tracing

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/rule"
)

// Span attribute keys, eKuiper's.
const (
	DataKey = "data"
	RuleKey = "rule"
)

// MaxData bounds the data attribute of a span, in bytes; longer data is cut
// and marked.
const MaxData = 4096

// Ctx is the trace context a sampled record carries from operator to
// operator (operator.Item.Trace). It is immutable.
type Ctx struct {
	sc oteltrace.SpanContext
}

// TraceID is the hex id of the trace.
func (c *Ctx) TraceID() string { return c.sc.TraceID().String() }

// Span is an open span. The zero Span is inert.
type Span struct {
	s   oteltrace.Span
	r   *Rule
	ctx *Ctx
}

// Ctx is the context children of the span start from.
func (s Span) Ctx() *Ctx { return s.ctx }

// SetData records the data the span's operator received (see Data).
func (s Span) SetData(data string) {
	if s.s != nil {
		s.s.SetAttributes(attribute.String(DataKey, data))
	}
}

// Fail marks the span failed.
func (s Span) Fail(err error) {
	if s.s != nil && err != nil {
		s.s.SetStatus(codes.Error, rule.MaskText(err.Error()))
	}
}

// End ends the span.
func (s Span) End() {
	if s.s != nil {
		s.s.End(oteltrace.WithTimestamp(s.r.svc.clock.Now()))
	}
}

// Sample decides whether tuple t, arriving from its stream, is traced and,
// if so, records its source span (named after the stream, with the tuple
// as data) and returns the context its operators continue. A tuple whose
// metadata carries a W3C traceparent (a "traceparent" key, or one in MQTT
// v5 user properties) continues that trace; with strategy Head only such
// tuples are traced. Nil: not traced.
func (r *Rule) Sample(t *row.Tuple) *Ctx {
	st := r.strategy.Load()
	if st == nil {
		return nil
	}
	parent := context.Background()
	if tp := traceparent(t.Metadata); tp != "" {
		parent = propagation.TraceContext{}.Extract(parent, propagation.MapCarrier{"traceparent": tp})
	}
	if *st == Head && !oteltrace.SpanContextFromContext(parent).IsValid() {
		return nil
	}
	sp := r.start(parent, t.Emitter, false, nil)
	sp.SetData(TuplesData([]*row.Tuple{t}))
	sp.End()
	return sp.ctx
}

func traceparent(meta map[string]any) string {
	if s, ok := meta["traceparent"].(string); ok {
		return s
	}
	switch up := meta["userProperties"].(type) {
	case map[string]string:
		return up["traceparent"]
	case map[string]any:
		s, _ := up["traceparent"].(string)
		return s
	}
	return ""
}

// Start opens the span of operator or sink name for a record traced as
// parent.
func (r *Rule) Start(parent *Ctx, name string) Span {
	return r.start(oteltrace.ContextWithSpanContext(context.Background(), parent.sc), name, false, nil)
}

// Root opens a new trace at operator name, for output that no traced
// record carries (a window fired by its timer); links name the traces of
// records the operator took in before (at most MaxLinks are kept).
func (r *Rule) Root(name string, links []*Ctx) Span {
	var ls []oteltrace.Link
	for _, l := range links {
		ls = append(ls, oteltrace.Link{SpanContext: l.sc})
	}
	return r.start(context.Background(), name, true, ls)
}

// MaxLinks bounds the links of a root span.
const MaxLinks = 64

// start opens a span under parent's span context; root opens a new trace.
func (r *Rule) start(parent context.Context, name string, root bool, links []oteltrace.Link) Span {
	opts := []oteltrace.SpanStartOption{
		oteltrace.WithTimestamp(r.svc.clock.Now()),
		oteltrace.WithAttributes(attribute.String(RuleKey, r.id)),
	}
	if root {
		opts = append(opts, oteltrace.WithNewRoot(), oteltrace.WithLinks(links...))
	}
	_, s := r.svc.tracer.Start(parent, name, opts...)
	return Span{s: s, r: r, ctx: &Ctx{sc: s.SpanContext()}}
}

// TuplesData is the data attribute of tuples: one tuple as a JSON object,
// several as an array.
func TuplesData(ts []*row.Tuple) string {
	if len(ts) == 1 {
		return bounded(columns(ts[0]))
	}
	rows := make([]map[string]any, len(ts))
	for i, t := range ts {
		rows[i] = columns(t)
	}
	return bounded(rows)
}

// SetData is the data attribute of a window's or join's rows: a JSON array.
func SetData(set *row.Set) string {
	rows := make([]map[string]any, len(set.Rows))
	for i, r := range set.Rows {
		if t, ok := r.(*row.Tuple); ok {
			rows[i] = columns(t)
		} else {
			rows[i] = rule.MaskProps(r.Columns(""))
		}
	}
	return bounded(rows)
}

// ResultsData is the data attribute of projected rows: a JSON array.
func ResultsData(rows []map[string]any) string {
	masked := make([]map[string]any, len(rows))
	for i, r := range rows {
		masked[i] = rule.MaskProps(r)
	}
	return bounded(masked)
}

// columns copies a tuple's columns with secrets masked. Tuples are shared
// by every rule on a stream, so they are read with Range, which caches
// nothing.
func columns(t *row.Tuple) map[string]any {
	m := map[string]any{}
	t.Range("", func(k string, v any) { m[k] = v })
	return rule.MaskProps(m)
}

// bounded encodes v as JSON, cut to MaxData bytes.
func bounded(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		b = fmt.Appendf(nil, "%v", v)
	}
	if len(b) <= MaxData {
		return string(b)
	}
	n := MaxData
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return fmt.Sprintf("%s…(%d bytes, cut)", b[:n], len(b))
}
