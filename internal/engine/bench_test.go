package engine

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"testing"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/runtime"
	"github.com/rekuiper/rekuiper/internal/tracing"
)

const (
	benchStream = `CREATE STREAM s (deviceId STRING, temperature FLOAT, humidity BIGINT, status STRING) WITH (DATASOURCE="s", FORMAT="json")`
	filterSQL   = "SELECT deviceId, temperature FROM s WHERE temperature > 30"
	windowSQL   = "SELECT deviceId, count(*) AS c, avg(temperature) AS a, max(humidity) AS m FROM s GROUP BY deviceId, TUMBLINGWINDOW(ms, 10000)"
	windowRows  = 10000 // rows per window
)

type countSink struct{ rows atomic.Int64 }

func (c *countSink) Name() string { return "count" }
func (c *countSink) Collect(_ context.Context, rows []map[string]any) error {
	c.rows.Add(int64(len(rows)))
	return nil
}

func build(b testing.TB, sql string, vc *clock.Virtual, sink runtime.Sink, tr *runtime.Tracker) *Built {
	return buildTraced(b, sql, vc, sink, tr, nil)
}

// buildTraced is build with the rule's tracing switch (nil: none).
func buildTraced(b testing.TB, sql string, vc *clock.Virtual, sink runtime.Sink, tr *runtime.Tracker, trace *tracing.Rule) *Built {
	b.Helper()
	defs, err := ParseDefs([]string{benchStream})
	if err != nil {
		b.Fatal(err)
	}
	built, err := Build(Spec{ID: "bench", SQL: sql, Options: rule.Options{BufferLength: 1024}, Defs: defs,
		Funcs: function.Builtins(), Clock: vc, Sinks: []runtime.Sink{sink}, Tracker: tr, Trace: trace})
	if err != nil {
		b.Fatal(err)
	}
	return built
}

func payloads(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(fmt.Sprintf(`{"deviceId":"dev%d","temperature":%d.5,"humidity":%d,"status":"ok"}`, i%100, 20+i%20, 40+i%30))
	}
	return out
}

func decoded(b *testing.B, n int) []map[string]any {
	codec, _ := format.New("json", format.Options{})
	rows := make([]map[string]any, n)
	for i, p := range payloads(n) {
		recs, err := codec.Decode(p)
		if err != nil {
			b.Fatal(err)
		}
		rows[i] = recs[0]
	}
	return rows
}

// chain runs items through bare operators synchronously, as the runtime's
// operator goroutine does, without channels or metrics.
type chain struct {
	ops   []operator.Operator
	ctxs  []*operator.Context
	emits []operator.Emit
	sink  func(operator.Item)
}

type noTimers struct{}

func (noTimers) At(int64) {}

func newChain(built *Built, vc *clock.Virtual, sink func(operator.Item)) *chain {
	stats := &eval.RuleStats{}
	c := &chain{ops: built.Plan.Ops, sink: sink}
	for i, op := range c.ops {
		ctx := &operator.Context{Env: &Env{Clock: vc}, Rule: stats, Timers: noTimers{},
			NowMS: func() int64 { return clock.NowMilli(vc) }}
		c.ctxs = append(c.ctxs, ctx)
		next := i + 1
		c.emits = append(c.emits, func(out operator.Item) { c.run(next, out) })
		if s, ok := op.(operator.Starter); ok {
			s.Start(ctx)
		}
	}
	return c
}

// encodeJSON returns the end of a bare chain: it encodes each emission as
// JSON, as a sink would (slot rows straight from their slots, then
// released), and adds the bytes to n.
func encodeJSON(b testing.TB, n *int) func(operator.Item) {
	codec := format.NewJSON()
	return func(it operator.Item) {
		var buf []byte
		var err error
		switch {
		case it.Slots != nil:
			buf, err = codec.EncodeSlots(it.Slots, nil)
			it.Slots.Release()
		case it.Results != nil:
			buf, err = codec.Encode(it.Results)
		}
		if err != nil {
			b.Fatal(err)
		}
		*n += len(buf)
	}
}

func (c *chain) run(i int, it operator.Item) {
	if i == len(c.ops) {
		c.sink(it)
		return
	}
	c.ops[i].Process(c.ctxs[i], it, c.emits[i])
}

// delivery is how many messages the benchmarks hand over at once, as the
// stream subscription delivers the messages that arrived together (up to
// 128).
const delivery = 64

// streamDecoder returns the decoder the daemon builds for the benchmark
// stream (typed JSON: declared fields go into slots).
func streamDecoder(b testing.TB) format.TupleDecoder { return streamDecoderOf(b, benchStream) }

// streamDecoderOf returns the decoder the daemon builds for the stream
// def (named s).
func streamDecoderOf(b testing.TB, def string) format.TupleDecoder {
	defs, err := ParseDefs([]string{def})
	if err != nil {
		b.Fatal(err)
	}
	dec, err := newDecoder(defs["s"], nil)
	if err != nil {
		b.Fatal(err)
	}
	return dec.(format.TupleDecoder)
}

// decodeDelivery decodes messages [from, to) of ps into a fresh slice of
// tuples, as stream.Subscription does for one delivery.
func decodeDelivery(b testing.TB, dec format.TupleDecoder, ps [][]byte, from, to int) []*row.Tuple {
	ts := make([]*row.Tuple, 0, to-from)
	for j := from; j < to; j++ {
		n := len(ts)
		var err error
		if ts, err = dec.DecodeTuples(ts, ps[j%len(ps)]); err != nil {
			b.Fatal(err)
		}
		for _, t := range ts[n:] {
			t.Emitter, t.Timestamp = "s", int64(j)
		}
	}
	return ts
}

// mallocs reads the process's allocation count.
func mallocs() uint64 {
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.Mallocs
}

// reportAllocsPerMsg reports allocations per message with two decimals
// (-benchmem's allocs/op is rounded down to an integer).
func reportAllocsPerMsg(b *testing.B, start uint64) {
	b.ReportMetric(float64(mallocs()-start)/float64(b.N), "allocs/msg")
}

// BenchmarkFilterPathOperators: decode a 4-field JSON object, WHERE,
// projection, encode JSON — bare operators, without channels or metrics,
// messages decoded and handed over in deliveries of 64.
func BenchmarkFilterPathOperators(b *testing.B) {
	filterPathOperators(b, streamDecoder(b), payloads(1024))
}

// filterPathOperators runs the filter rule's bare operators over ps,
// decoded by dec.
func filterPathOperators(b *testing.B, dec format.TupleDecoder, ps [][]byte) {
	vc := clock.NewVirtual(0)
	var bytesOut int
	c := newChain(build(b, filterSQL, vc, &countSink{}, nil), vc, encodeJSON(b, &bytesOut))
	b.ReportAllocs()
	b.ResetTimer()
	start := mallocs()
	for i := 0; i < b.N; i += delivery {
		ts := decodeDelivery(b, dec, ps, i, min(i+delivery, b.N))
		c.run(0, operator.Item{Kind: operator.Data, Tuples: ts})
	}
	reportAllocsPerMsg(b, start)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkFilterPathRuntime: the same through the rule runtime (bounded
// channels, metrics, a sink goroutine that encodes).
func BenchmarkFilterPathRuntime(b *testing.B) { filterPathRuntime(b, nil) }

func filterPathRuntime(b *testing.B, trace *tracing.Rule) {
	vc := clock.NewVirtual(0)
	sink := &encodeSink{codec: format.NewJSON()}
	built := buildTraced(b, filterSQL, vc, sink, nil, trace)
	dec := streamDecoder(b)
	ps := payloads(1024)
	r := built.Rule
	r.Start()
	b.ReportAllocs()
	b.ResetTimer()
	start := mallocs()
	for i := 0; i < b.N; i += delivery {
		r.Send(operator.Item{Kind: operator.Data, Tuples: decodeDelivery(b, dec, ps, i, min(i+delivery, b.N))})
	}
	r.Stop()
	reportAllocsPerMsg(b, start)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// encodeSink encodes each emission as JSON: slot rows straight from their
// slots into the codec's buffer, as the built-in sinks that take them do.
// decodedDeliveries decodes the benchmark's 1,024 messages once, in
// deliveries of 64, for the benchmarks and tests of the rule path alone:
// the same tuples are sent again and again, as records are read-only and
// every rule works on its own copies.
func decodedDeliveries(b testing.TB) [][]*row.Tuple {
	dec, ps := streamDecoder(b), payloads(1024)
	var out [][]*row.Tuple
	for i := 0; i < len(ps); i += delivery {
		out = append(out, decodeDelivery(b, dec, ps, i, i+delivery))
	}
	return out
}

// BenchmarkFilterPathOperatorsDecoded is BenchmarkFilterPathOperators
// without the decoding: records decoded before the clock starts.
func BenchmarkFilterPathOperatorsDecoded(b *testing.B) {
	vc := clock.NewVirtual(0)
	var bytesOut int
	c := newChain(build(b, filterSQL, vc, &countSink{}, nil), vc, encodeJSON(b, &bytesOut))
	ds := decodedDeliveries(b)
	b.ReportAllocs()
	b.ResetTimer()
	start := mallocs()
	for i := 0; i < b.N; i += delivery {
		ts := ds[(i/delivery)%len(ds)]
		c.run(0, operator.Item{Kind: operator.Data, Tuples: ts[:min(delivery, b.N-i)]})
	}
	reportAllocsPerMsg(b, start)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkFilterPathRuntimeDecoded is BenchmarkFilterPathRuntime without
// the decoding: records decoded before the clock starts.
func BenchmarkFilterPathRuntimeDecoded(b *testing.B) {
	vc := clock.NewVirtual(0)
	sink := &encodeSink{codec: format.NewJSON()}
	r := build(b, filterSQL, vc, sink, nil).Rule
	ds := decodedDeliveries(b)
	r.Start()
	b.ReportAllocs()
	b.ResetTimer()
	start := mallocs()
	for i := 0; i < b.N; i += delivery {
		ts := ds[(i/delivery)%len(ds)]
		r.Send(operator.Item{Kind: operator.Data, Tuples: ts[:min(delivery, b.N-i)]})
	}
	r.Stop()
	reportAllocsPerMsg(b, start)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

type encodeSink struct {
	codec *format.JSONCodec
	n     int
}

var _ runtime.SlotSink = (*encodeSink)(nil)

func (s *encodeSink) Name() string { return "encode" }
func (s *encodeSink) Collect(_ context.Context, rows []map[string]any) error {
	buf, err := s.codec.Encode(rows)
	s.n += len(buf)
	return err
}
func (s *encodeSink) CollectSlots(_ context.Context, rows *row.SlotRows) error {
	buf, err := s.codec.EncodeSlots(rows, nil)
	s.n += len(buf)
	return err
}

// BenchmarkWindowAggOperators: GROUP BY key (100 keys) + tumbling window
// with count/avg/max over decoded rows, bare operators; the window fires
// every 10,000 rows.
func BenchmarkWindowAggOperators(b *testing.B) {
	vc := clock.NewVirtual(0)
	var out int
	built := build(b, windowSQL, vc, &countSink{}, nil)
	c := newChain(built, vc, func(it operator.Item) { out += len(it.Results) })
	win := windowIndex(built)
	rows := decoded(b, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.run(0, operator.Item{Kind: operator.Data, Tuples: []*row.Tuple{{Emitter: "s", Message: rows[i%len(rows)], Timestamp: int64(i)}}})
		if i%windowRows == windowRows-1 {
			end := int64(i/windowRows+1) * windowRows
			vc.AdvanceTo(end, nil)
			c.run(win, operator.Item{Kind: operator.Tick, TS: end})
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkWindowAggRuntime: the same through the rule runtime, rows sent
// in batches of 100, the window fired by the virtual clock.
func BenchmarkWindowAggRuntime(b *testing.B) {
	vc := clock.NewVirtual(0)
	tr := runtime.NewTracker()
	built := build(b, windowSQL, vc, &countSink{}, tr)
	rows := decoded(b, 1024)
	r := built.Rule
	r.Start()
	b.ReportAllocs()
	b.ResetTimer()
	const batch = 100
	for i := 0; i < b.N; i += batch {
		ts := make([]*row.Tuple, 0, batch)
		for j := i; j < i+batch && j < b.N; j++ {
			ts = append(ts, &row.Tuple{Emitter: "s", Message: rows[j%len(rows)], Timestamp: int64(j)})
		}
		r.Send(operator.Item{Kind: operator.Data, Tuples: ts})
		if (i+batch)%windowRows == 0 {
			vc.AdvanceTo(int64(i+batch), nil)
		}
	}
	tr.Wait()
	r.Stop()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func windowIndex(built *Built) int {
	for i, op := range built.Plan.Ops {
		if _, ok := op.(*operator.Window); ok {
			return i
		}
	}
	return -1
}
