package engine

import (
	"testing"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/runtime"
)

// TestFilterPathAllocs pins the allocations of a stateless rule (WHERE and
// SELECT of plain fields, a sink that encodes JSON from slots) through the
// runtime, decoded records given: what the rule adds per message must stay
// far below one allocation (it is zero but for the pools refilling after
// a GC). A map per output row, a payload per message, or a cell per item
// or per tuple copy brings it to 0.5 or more. Under the race detector,
// which makes pools drop what they are given now and then, the bound is
// one per message.
func TestFilterPathAllocs(t *testing.T) {
	vc := clock.NewVirtual(0)
	tr := runtime.NewTracker()
	sink := &encodeSink{codec: format.NewJSON()}
	r := build(t, filterSQL, vc, sink, tr).Rule
	ds := decodedDeliveries(t)
	r.Start()
	defer r.Stop()
	requireAllocsPerMsg(t, 0.1, 1, func(i int) {
		r.Send(operator.Item{Kind: operator.Data, Tuples: ds[i%len(ds)]})
		tr.Wait()
	}, sink.requireEncoded)
}

// requireAllocsPerMsg sends 200 deliveries with send (i counts them), then
// checks with sent that the sink got them and that each message allocated
// less than limit, or raceLimit under the race detector.
func requireAllocsPerMsg(t *testing.T, limit, raceLimit float64, send func(i int), sent func(*testing.T)) {
	t.Helper()
	if raceEnabled {
		limit = raceLimit
	}
	i := 0
	perDelivery := testing.AllocsPerRun(200, func() {
		send(i)
		i++
	})
	sent(t)
	if perMsg := perDelivery / delivery; perMsg >= limit {
		t.Fatalf("%.2f allocations per message (%.1f per delivery of %d), want < %g", perMsg, perDelivery, delivery, limit)
	}
}

func (s *encodeSink) requireEncoded(t *testing.T) {
	t.Helper()
	if s.n == 0 {
		t.Fatal("the sink encoded nothing")
	}
}

// TestFilterPathDecodeAllocs pins the allocations of the same rule with
// the stream's JSON decoding included, as BenchmarkFilterPathRuntime
// measures it: the decoder's arena chunks (about 0.21 per 4-field record)
// and the slice of each delivery (1/64), nothing else. Under the race
// detector the rule's pools may add up to one per message.
func TestFilterPathDecodeAllocs(t *testing.T) {
	vc := clock.NewVirtual(0)
	tr := runtime.NewTracker()
	sink := &encodeSink{codec: format.NewJSON()}
	r := build(t, filterSQL, vc, sink, tr).Rule
	dec, ps := streamDecoder(t), payloads(1024)
	r.Start()
	defer r.Stop()
	requireAllocsPerMsg(t, 0.25, 1.25, func(i int) {
		r.Send(operator.Item{Kind: operator.Data, Tuples: decodeDelivery(t, dec, ps, i*delivery, (i+1)*delivery)})
		tr.Wait()
	}, sink.requireEncoded)
}
