package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/runtime"
	"github.com/rekuiper/rekuiper/internal/stream"
	"github.com/rekuiper/rekuiper/internal/tracing"
	"github.com/rekuiper/rekuiper/internal/userstate"
)

// The tests of this file run records through a real stream subscription
// (its push path, as MQTT at qos 0 uses it) into real rules, with the
// stream's JSON decoder counting how each batch's memory ended: recycled
// or kept. Under the race detector the arena overwrites recycled memory
// with garbage (row.Arena), so a rule reading a record, or a watcher
// reading a value, after its memory was recycled sees the garbage, and
// the outputs compared here differ or the read panics.

// pushSrc is a push source (stream.Pusher) the test pushes messages into.
type pushSrc struct {
	fn    func([]*api.Message) bool
	ready chan struct{}
}

func (p *pushSrc) PushTo(fn func([]*api.Message) bool) { p.fn = fn; close(p.ready) }
func (p *pushSrc) Connect(context.Context) error       { return nil }
func (p *pushSrc) Close(context.Context) error         { return nil }
func (p *pushSrc) Read(context.Context) (*api.Message, error) {
	return nil, errors.New("push source read")
}

// countingCodec is the stream's JSON decoder, counting the batches whose
// memory it recycled and kept.
type countingCodec struct {
	*format.JSONCodec
	recycled, kept atomic.Int64
}

func (c *countingCodec) Recycle() { c.recycled.Add(1); c.JSONCodec.Recycle() }
func (c *countingCodec) Keep()    { c.kept.Add(1); c.JSONCodec.Keep() }

type recycleRig struct {
	t   testing.TB
	def string
	src *pushSrc
	dec *countingCodec
	sub *stream.Subscription
	vc  *clock.Virtual
	tr  *runtime.Tracker
	ps  [][]byte
	// next is the index in ps of the next message pushed.
	next int
}

func newRecycleRig(t testing.TB) *recycleRig { return newRecycleRigOn(t, benchStream) }

// newRecycleRigOn is newRecycleRig for the stream def.
func newRecycleRigOn(t testing.TB, def string) *recycleRig {
	d := streamDecoderOf(t, def)
	g := &recycleRig{t: t, def: def, src: &pushSrc{ready: make(chan struct{})}, dec: &countingCodec{JSONCodec: d.(*format.JSONCodec)},
		vc: clock.NewVirtual(0), tr: runtime.NewTracker(), ps: payloads(1000)}
	g.sub = stream.NewSubscription("s", g.src, g.dec, g.vc, nil)
	g.sub.Start()
	<-g.src.ready
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := g.sub.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return g
}

// rule builds sql over the stream (with spec's functions, tap and trace)
// and attaches it as the daemon does (running.consumer).
func (g *recycleRig) rule(spec Spec, sink runtime.Sink) (*runtime.Rule, int) {
	g.t.Helper()
	defs, err := ParseDefs([]string{g.def})
	if err != nil {
		g.t.Fatal(err)
	}
	spec.Defs, spec.Clock, spec.Tracker, spec.EndsDeliveries = defs, g.vc, g.tr, true
	spec.Sinks = []runtime.Sink{sink}
	spec.Options = rule.Options{BufferLength: 1024}
	if spec.Funcs == nil {
		spec.Funcs = function.Builtins()
	}
	if spec.SQL == "" {
		spec.SQL = filterSQL
	}
	built, err := Build(spec)
	if err != nil {
		g.t.Fatal(err)
	}
	r := built.Rule
	r.Start()
	g.t.Cleanup(r.Stop)
	id := g.sub.Attach(&stream.Consumer{
		Deliver: func(ts []*row.Tuple) bool {
			return r.Send(operator.Item{Kind: operator.Data, Tuples: ts})
		},
		Delivered: r.EndDelivery,
		Kept:      r.DeliveryKept,
	})
	return r, id
}

// push pushes n batches of 1 to 64 messages and returns the messages'
// range in ps.
func (g *recycleRig) push(n int) (from, to int) {
	from = g.next
	for i := range n {
		size := (i*37+g.next)%64 + 1
		msgs := make([]*api.Message, size)
		for j := range msgs {
			msgs[j] = &api.Message{Payload: g.ps[g.next%len(g.ps)]}
			g.next++
		}
		if !g.src.fn(msgs) {
			g.t.Fatal("the subscription took no message")
		}
	}
	return from, g.next
}

// want is what filterSQL makes of messages [from, to): one payload per
// passing row, decoded afresh.
func (g *recycleRig) want(from, to int) []string {
	g.t.Helper()
	dec, sink := streamDecoder(g.t), newInlineSink(false)
	t, ok := g.t.(*testing.T)
	if !ok {
		g.t.Fatal("want needs a *testing.T")
	}
	if err := filterOnly(t, decodeDelivery(g.t, dec, g.ps, from, to), sink); err != nil {
		g.t.Fatal(err)
	}
	return sink.held
}

func (g *recycleRig) counts() (recycled, kept int64) {
	return g.dec.recycled.Load(), g.dec.kept.Load()
}

func sentBy(s *inlineSink) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Concat(s.sent, s.held)
}

func sameOutput(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("%s: nothing expected, the test is void", what)
	}
	if !slices.Equal(got, want) {
		n := min(len(got), len(want))
		for i := range n {
			if got[i] != want[i] {
				t.Fatalf("%s: payload %d = %s, want %s (%d payloads, want %d)", what, i, got[i], want[i], len(got), len(want))
			}
		}
		t.Fatalf("%s: %d payloads, want %d", what, len(got), len(want))
	}
}

// TestRecycleManyDirectRules: with only direct rules on the stream, every
// batch's memory is recycled, and each rule's output is exactly what the
// records make, decoded afresh.
// The schemaless stream's records are maps, reused too.
func TestRecycleManyDirectRules(t *testing.T) {
	for name, def := range map[string]string{"typed": benchStream, "schemaless": `CREATE STREAM s () WITH (DATASOURCE="s", FORMAT="json")`} {
		t.Run(name, func(t *testing.T) {
			g := newRecycleRigOn(t, def)
			var sinks []*inlineSink
			for range 5 {
				s := newInlineSink(true)
				// With the extensions' user state, as the runner builds
				// every rule: only extension functions reach it.
				g.rule(Spec{ID: "direct", UserState: userstate.New()}, s)
				sinks = append(sinks, s)
			}
			from, to := g.push(60)
			if rec, kept := g.counts(); rec != 60 || kept != 0 {
				t.Fatalf("%d batches recycled, %d kept; want all 60 recycled", rec, kept)
			}
			want := g.want(from, to)
			for _, s := range sinks {
				sameOutput(t, "direct rule", sentBy(s), want)
			}
		})
	}
}

// TestRecycleStopsWhileTraced: records sampled for tracing stay in their
// traces, so batches are kept while tracing is on.
func TestRecycleStopsWhileTraced(t *testing.T) {
	g := newRecycleRig(t)
	svc, err := tracing.New(config.Default().OpenTelemetry, tracing.Options{Clock: clock.NewVirtual(0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Shutdown(context.Background()) }) //nolint:errcheck // test end
	sink := newInlineSink(true)
	g.rule(Spec{ID: "traced", Trace: svc.Rule("traced")}, sink)
	from, _ := g.push(5)
	svc.Rule("traced").Enable(tracing.Always)
	g.push(5)
	svc.Rule("traced").Disable()
	_, to := g.push(5)
	if rec, kept := g.counts(); rec != 10 || kept != 5 {
		t.Fatalf("%d batches recycled, %d kept; want 10 and 5", rec, kept)
	}
	if ids := svc.Store().TraceIDs("traced", 0); len(ids) == 0 {
		t.Fatal("nothing traced")
	}
	sameOutput(t, "sink", sentBy(sink), g.want(from, to))
}

// TestRecycleStopsOnError: an error while processing a delivery (here a
// comparison of a string with a number) may quote a value in the rule's
// metrics, so that batch is kept.
func TestRecycleStopsOnError(t *testing.T) {
	g := newRecycleRig(t)
	sink := newInlineSink(true)
	r, _ := g.rule(Spec{ID: "errs", SQL: "SELECT deviceId FROM s WHERE deviceId > 30"}, sink)
	g.push(3)
	if rec, kept := g.counts(); rec != 0 || kept != 3 {
		t.Fatalf("%d batches recycled, %d kept; want all 3 kept", rec, kept)
	}
	var n int64
	for _, m := range r.OpMetrics {
		n += m.Exceptions.Load()
	}
	if n == 0 {
		t.Fatal("the rule met no error: the test is void")
	}
}

// TestRecycleStopsForRuleWithGoroutine: a rule with its own goroutines
// (here its sink is not inline) reads records after the delivery returned:
// while it is attached, no batch is recycled, and its output is right.
// Before it came and after it left, batches are recycled again.
func TestRecycleStopsForRuleWithGoroutine(t *testing.T) {
	g := newRecycleRig(t)
	direct := newInlineSink(true)
	g.rule(Spec{ID: "direct"}, direct)
	from, _ := g.push(10)
	queued := newInlineSink(false)
	r, id := g.rule(Spec{ID: "queued"}, queued)
	qFrom, qTo := g.push(15)
	g.sub.Detach(id)
	g.tr.Wait()
	r.Stop()
	_, to := g.push(10)
	if rec, kept := g.counts(); rec != 20 || kept != 15 {
		t.Fatalf("%d batches recycled, %d kept; want 20 and 15", rec, kept)
	}
	sameOutput(t, "queued rule", sentBy(queued), g.want(qFrom, qTo))
	sameOutput(t, "direct rule", sentBy(direct), g.want(from, to))
}

// TestRecycleStopsWhileTapped: a direct rule hands its rows to the live tap
// while someone watches; the watcher reads them later, so those batches
// are kept, and the rows it kept still hold their values once later
// batches were recycled.
func TestRecycleStopsWhileTapped(t *testing.T) {
	g := newRecycleRig(t)
	var watching atomic.Bool
	var mu sync.Mutex
	var tapped []map[string]any
	sink := newInlineSink(true)
	g.rule(Spec{ID: "tapped", Tapping: watching.Load, Tap: func(rows []map[string]any) {
		mu.Lock()
		tapped = append(tapped, rows...)
		mu.Unlock()
	}}, sink)
	from, _ := g.push(10)
	watching.Store(true)
	tFrom, tTo := g.push(10)
	watching.Store(false)
	_, to := g.push(20)
	if rec, kept := g.counts(); rec != 30 || kept != 10 {
		t.Fatalf("%d batches recycled, %d kept; want 30 and 10", rec, kept)
	}
	enc := format.NewJSON()
	var got []string
	mu.Lock()
	for _, m := range tapped {
		b, err := enc.Encode([]map[string]any{m})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	mu.Unlock()
	sameOutput(t, "tap", got, g.want(tFrom, tTo))
	sameOutput(t, "sink", sentBy(sink), g.want(from, to))
}

// TestRecycleStopsForKeepingFunction: a rule that calls a function which
// is not built in (here one that keeps its arguments) never lets a batch be
// recycled, though it runs directly; what the function kept is intact.
func TestRecycleStopsForKeepingFunction(t *testing.T) {
	g := newRecycleRig(t)
	funcs := function.Builtins()
	var kept []any
	if err := funcs.Add(&function.Def{Name: "keep_arg", Kind: function.Scalar, MinArgs: 1, MaxArgs: 1,
		Scalar: func(_ function.Env, args []any) (any, error) {
			kept = append(kept, args[0])
			return args[0], nil
		}}); err != nil {
		t.Fatal(err)
	}
	sink := newInlineSink(true)
	g.rule(Spec{ID: "keeps", Funcs: funcs, SQL: "SELECT keep_arg(deviceId) AS deviceId, temperature FROM s WHERE temperature > 30"}, sink)
	from, to := g.push(20)
	if rec, k := g.counts(); rec != 0 || k != 20 {
		t.Fatalf("%d batches recycled, %d kept; want all 20 kept", rec, k)
	}
	want := g.want(from, to)
	sameOutput(t, "sink", sentBy(sink), want)
	var got []string
	for _, tu := range decodeDelivery(t, streamDecoder(t), g.ps, from, to) {
		if v, _ := tu.Value("", "temperature"); v.(float64) > 30 {
			d, _ := tu.Value("", "deviceId")
			got = append(got, d.(string))
		}
	}
	if len(kept) != len(got) {
		t.Fatalf("the function kept %d values, want %d", len(kept), len(got))
	}
	for i := range got {
		if kept[i] != got[i] {
			t.Fatalf("kept value %d = %#v, want %q", i, kept[i], got[i])
		}
	}
}

// TestSubscriptionRecycleAllocs: from the stream's payloads to the encoded
// output, a direct rule on a stream whose rules are all direct allocates
// nothing per message, decoding included (the batches are recycled).
// Under the race detector the rule's pools drop objects on purpose and
// recycled memory is poisoned, so the bound is one per message.
func TestSubscriptionRecycleAllocs(t *testing.T) {
	limit := 0.01
	if raceEnabled {
		limit = 1
	}
	g := newRecycleRig(t)
	sink := &inlineEncodeSink{encodeSink: encodeSink{codec: format.NewJSON()}}
	g.rule(Spec{ID: "direct"}, sink)
	batches := messageBatches(g.ps, delivery)
	i := 0
	perBatch := testing.AllocsPerRun(200, func() {
		g.src.fn(batches[i%len(batches)])
		i++
	})
	if rec, _ := g.counts(); rec == 0 || sink.n == 0 {
		t.Fatalf("%d batches recycled, %d bytes encoded", rec, sink.n)
	}
	if perMsg := perBatch / delivery; perMsg >= limit {
		t.Fatalf("%.3f allocations per message (%.2f per batch of %d), want < %g", perMsg, perBatch, delivery, limit)
	}
}

// messageBatches wraps ps in messages, in batches of n.
func messageBatches(ps [][]byte, n int) [][]*api.Message {
	var out [][]*api.Message
	for i := 0; i+n <= len(ps); i += n {
		b := make([]*api.Message, n)
		for j := range b {
			b[j] = &api.Message{Payload: ps[i+j]}
		}
		out = append(out, b)
	}
	return out
}

// BenchmarkFilterPathSubscription is the filter path from payloads to the
// encoded output through a stream subscription (its push path) and a
// direct rule (operators and an inline sink on the delivering goroutine),
// deliveries of 64: the stream's only rule is direct, so every batch's
// decoded memory is recycled.
func BenchmarkFilterPathSubscription(b *testing.B) {
	g := newRecycleRig(b)
	sink := &inlineEncodeSink{encodeSink: encodeSink{codec: format.NewJSON()}}
	g.rule(Spec{ID: "direct"}, sink)
	batches := messageBatches(g.ps, delivery)
	b.ReportAllocs()
	b.ResetTimer()
	start := mallocs()
	for i := 0; i < b.N; i += delivery {
		n := min(delivery, b.N-i)
		g.src.fn(batches[(i/delivery)%len(batches)][:n])
	}
	reportAllocsPerMsg(b, start)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
