package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// fakeSource serves payloads; it fails once after failAt records (to test
// reconnects) and ends with io.EOF when bounded.
type fakeSource struct {
	mu       sync.Mutex
	payloads []string
	next     int
	failAt   int
	failed   bool
	bounded  bool
	connects int
	gate     chan struct{} // when set, each Read waits for a token
}

func (f *fakeSource) Connect(context.Context) error {
	f.mu.Lock()
	f.connects++
	f.mu.Unlock()
	return nil
}
func (f *fakeSource) Close(context.Context) error { return nil }
func (f *fakeSource) Read(ctx context.Context) (*api.Message, error) {
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failAt > 0 && f.next == f.failAt && !f.failed {
		f.failed = true
		return nil, errors.New("connection reset")
	}
	if f.next >= len(f.payloads) {
		if f.bounded {
			return nil, io.EOF
		}
		f.mu.Unlock()
		<-ctx.Done()
		f.mu.Lock()
		return nil, ctx.Err()
	}
	p := f.payloads[f.next]
	f.next++
	return &api.Message{Payload: []byte(p), Meta: map[string]any{"topic": "t"}}, nil
}
func (f *fakeSource) Offset() ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return json.Marshal(f.next)
}
func (f *fakeSource) Rewind(b []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return json.Unmarshal(b, &f.next)
}

type recorder struct {
	mu       sync.Mutex
	seqs     []int64
	tuples   []*row.Tuple
	barriers map[uint64]string // barrier id → offset
	errs     int
	ended    chan error
}

func newRecorder() *recorder {
	return &recorder{barriers: map[uint64]string{}, ended: make(chan error, 1)}
}

func (r *recorder) consumer() *Consumer {
	return &Consumer{
		Deliver: func(ts []*row.Tuple) bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, t := range ts {
				seq, _ := t.Value("", "seq")
				r.seqs = append(r.seqs, seq.(int64))
				r.tuples = append(r.tuples, t)
			}
			return true
		},
		Barrier: func(id uint64, off []byte) {
			r.mu.Lock()
			r.barriers[id] = string(off)
			r.mu.Unlock()
		},
		Error: func(error) { r.mu.Lock(); r.errs++; r.mu.Unlock() },
		End:   func(err error) { r.ended <- err },
	}
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seqs)
}

func jsonDecoder(t *testing.T) format.Decoder {
	d, err := format.New("json", format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestBarrierRecordsOffsetAfterLastDeliveredRecord(t *testing.T) {
	src := &fakeSource{payloads: []string{`{"seq":0}`, `{"seq":1}`, `{"seq":2}`, `{"seq":3}`}, gate: make(chan struct{}, 8)}
	sub := NewSubscription("s", src, jsonDecoder(t), clock.Wall{}, nil)
	rec := newRecorder()
	id := sub.Attach(rec.consumer())
	sub.Start()
	defer sub.Stop(context.Background())
	src.gate <- struct{}{}
	src.gate <- struct{}{}
	testwait.Until(t, "two records delivered", func() bool { return rec.count() == 2 })
	// Nothing more arrives; the barrier must still be served, with the
	// offset after record 1.
	sub.InjectBarrier(id, 7)
	testwait.Until(t, "barrier 7", func() bool { rec.mu.Lock(); defer rec.mu.Unlock(); return rec.barriers[7] != "" })
	if got := rec.barriers[7]; got != "2" {
		t.Fatalf("barrier offset %s, want 2 (after the two delivered records)", got)
	}
}

func TestReconnectAfterReadErrorAndEnd(t *testing.T) {
	src := &fakeSource{payloads: []string{`{"seq":0}`, `not json`, `{"seq":2}`, `{"seq":3}`}, failAt: 3, bounded: true}
	sub := NewSubscription("s", src, jsonDecoder(t), clock.Wall{}, nil)
	rec := newRecorder()
	sub.Attach(rec.consumer())
	sub.Start()
	defer sub.Stop(context.Background())
	select {
	case err := <-rec.ended:
		if err != nil {
			t.Fatalf("end error %v, want nil (bounded source)", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("source never ended")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.seqs) != 3 || rec.seqs[0] != 0 || rec.seqs[2] != 3 || rec.errs != 1 {
		t.Fatalf("delivered %v with %d decode errors; want [0 2 3] and 1", rec.seqs, rec.errs)
	}
	if src.connects != 2 {
		t.Fatalf("connects = %d, want a reconnect after the read error", src.connects)
	}
	if st := sub.Status(); st.DecodeErrors != 1 || st.RecordsIn != 4 || !strings.Contains(st.LastDecodeError, "invalid character") || st.LastDecodeErrorTime == 0 {
		t.Fatalf("status %+v", st)
	}
}

// dropSource is a source that reports records it dropped.
type dropSource struct{ *fakeSource }

func (dropSource) Dropped() (int64, string, time.Time) {
	return 2, "cannot decompress", time.UnixMilli(1 << 50)
}

func TestDroppedRecordsCountAsDecodeErrors(t *testing.T) {
	src := dropSource{&fakeSource{payloads: []string{`{"seq":0}`}, bounded: true}}
	sub := NewSubscription("s", src, jsonDecoder(t), clock.Wall{}, nil)
	if st := sub.Status(); st.DecodeErrors != 2 || st.LastDecodeError != "cannot decompress" || st.LastDecodeErrorTime != 1<<50 {
		t.Fatalf("status %+v", st)
	}
}

// TestTypedStreamTuples: a JSON stream with declared fields delivers
// slotted tuples, stamped with the stream, metadata and arrival time, in
// order around a message that fails to decode.
func TestTypedStreamTuples(t *testing.T) {
	src := &fakeSource{payloads: []string{`{"seq":0,"x":1}`, `[{"seq":1},{"seq":2}]`, `{"seq":`, `{"seq":3}`}, bounded: true}
	dec, err := format.New("json", format.Options{Fields: []string{"seq"}})
	if err != nil {
		t.Fatal(err)
	}
	sub := NewSubscription("s", src, dec, clock.NewVirtual(1000), nil)
	rec := newRecorder()
	sub.Attach(rec.consumer())
	sub.Start()
	defer sub.Stop(context.Background())
	select {
	case <-rec.ended:
	case <-time.After(5 * time.Second):
		t.Fatal("source never ended")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if fmt.Sprint(rec.seqs) != "[0 1 2 3]" || rec.errs != 1 {
		t.Fatalf("delivered %v with %d decode errors; want [0 1 2 3] and 1", rec.seqs, rec.errs)
	}
	for i, tu := range rec.tuples {
		if tu.Layout() == nil || tu.Emitter != "s" || tu.Metadata["topic"] != "t" || tu.Timestamp != 1000 {
			t.Errorf("tuple %d: layout %v, emitter %q, metadata %v, time %d", i, tu.Layout(), tu.Emitter, tu.Metadata, tu.Timestamp)
		}
	}
	if x, _ := rec.tuples[0].Value("", "x"); x != int64(1) {
		t.Errorf("undeclared column x = %v", x)
	}
}

func TestManagerSharesSubscriptions(t *testing.T) {
	m := NewManager()
	made := 0
	create := func() (*Subscription, error) {
		made++
		return NewSubscription("s", &fakeSource{}, nil, clock.Wall{}, nil), nil
	}
	a, relA, _ := m.Acquire("k", create)
	b, relB, _ := m.Acquire("k", create)
	if a != b || made != 1 {
		t.Fatalf("rules on the same key must share one subscription (made %d)", made)
	}
	relA(context.Background())
	if m.Len() != 1 {
		t.Fatal("released too early")
	}
	relB(context.Background())
	if m.Len() != 0 {
		t.Fatal("last release must stop the subscription")
	}
}

// pushFake is a Pusher: the test pushes batches as its receive goroutine.
type pushFake struct {
	mu       sync.Mutex
	fn       func([]*api.Message) bool
	connects int
}

func (p *pushFake) PushTo(fn func([]*api.Message) bool) { p.mu.Lock(); p.fn = fn; p.mu.Unlock() }
func (p *pushFake) Connect(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fn == nil {
		return errors.New("Connect before PushTo")
	}
	p.connects++
	return nil
}
func (p *pushFake) Close(context.Context) error { return nil }
func (p *pushFake) push(msgs []*api.Message) bool {
	p.mu.Lock()
	fn := p.fn
	p.mu.Unlock()
	return fn(msgs)
}
func (p *pushFake) Read(context.Context) (*api.Message, error) {
	return nil, errors.New("push source read")
}

func TestPushedDeliveryBarriersAndStop(t *testing.T) {
	src := &pushFake{}
	sub := NewSubscription("s", src, jsonDecoder(t), clock.Wall{}, nil)
	// events records deliveries and barriers in the order the rule sees
	// them.
	var (
		mu     sync.Mutex
		events []string
	)
	cons := &Consumer{
		Deliver: func(ts []*row.Tuple) bool {
			mu.Lock()
			defer mu.Unlock()
			for _, tu := range ts {
				seq, _ := tu.Value("", "seq")
				events = append(events, fmt.Sprint(seq))
			}
			return true
		},
		Barrier: func(id uint64, off []byte) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, fmt.Sprintf("b%d:%s", id, off))
		},
	}
	id := sub.Attach(cons)
	sub.Start()
	testwait.Until(t, "the subscription to connect", func() bool { return sub.Status().State == "connected" })
	acked := 0
	batch := func(from, n int) []*api.Message {
		var out []*api.Message
		for i := from; i < from+n; i++ {
			out = append(out, &api.Message{Payload: fmt.Appendf(nil, `{"seq":%d}`, i), Ack: func() { acked++ }})
		}
		return out
	}
	// More than maxBatch in one push is split, in order.
	if !src.push(batch(0, maxBatch+3)) {
		t.Fatal("push refused while running")
	}
	sub.InjectBarrier(id, 1)
	testwait.Until(t, "the split batch and the barrier", func() bool { mu.Lock(); defer mu.Unlock(); return len(events) == maxBatch+4 })
	if !src.push(batch(maxBatch+3, 2)) {
		t.Fatal("push refused while running")
	}
	mu.Lock()
	want := []string{}
	for i := 0; i < maxBatch+3; i++ {
		want = append(want, fmt.Sprint(i))
	}
	want = append(want, "b1:", fmt.Sprint(maxBatch+3), fmt.Sprint(maxBatch+4))
	if fmt.Sprint(events) != fmt.Sprint(want) {
		t.Fatalf("events\n%v\nwant\n%v", events, want)
	}
	mu.Unlock()
	if acked != maxBatch+5 {
		t.Fatalf("acked %d messages, want %d", acked, maxBatch+5)
	}
	if st := sub.Status(); st.RecordsIn != int64(maxBatch+5) {
		t.Fatalf("records in %d", st.RecordsIn)
	}
	if err := sub.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	// After Stop a push is refused and nothing is acknowledged: the source
	// keeps those messages for redelivery.
	if src.push(batch(1000, 3)) {
		t.Fatal("push accepted after Stop")
	}
	if acked != maxBatch+5 {
		t.Fatalf("acked %d after Stop", acked)
	}
	if src.connects != 1 { // no reconnects: a push source reconnects by itself
		t.Fatalf("%d connects", src.connects)
	}
}

func TestPushRefusedWithoutConsumers(t *testing.T) {
	src := &pushFake{}
	sub := NewSubscription("s", src, jsonDecoder(t), clock.Wall{}, nil)
	id := sub.Attach(newRecorder().consumer())
	sub.Start()
	defer sub.Stop(context.Background())
	testwait.Until(t, "the subscription to connect", func() bool { return sub.Status().State == "connected" })
	sub.Detach(id)
	acked := false
	if src.push([]*api.Message{{Payload: []byte(`{"seq":1}`), Ack: func() { acked = true }}}) || acked {
		t.Fatal("a push without consumers was taken")
	}
}

// windowCodec is a JSON decoder counting how the subscription ends its
// windows of decoded tuples.
type windowCodec struct {
	*format.JSONCodec
	recycled, kept int
}

func (c *windowCodec) Recycle() { c.recycled++; c.JSONCodec.Recycle() }
func (c *windowCodec) Keep()    { c.kept++; c.JSONCodec.Keep() }

// TestRecycleNeedsEveryConsumerToKeepNothing: a batch's decoded memory is
// recycled only when every consumer reports, after the batch, that it
// kept nothing; a consumer that cannot report (no Kept), one that reports
// it kept something, or one attached with no Kept, makes the subscription
// keep the batch. Every reporting consumer is asked after every batch,
// whatever the others answer.
func TestRecycleNeedsEveryConsumerToKeepNothing(t *testing.T) {
	src := &releaseFake{}
	dec := &windowCodec{JSONCodec: format.NewJSONStream([]string{"seq"})}
	sub := NewSubscription("s", src, dec, clock.Wall{}, nil)
	var asked [2]int
	var keeps [2]bool
	consumer := func(i int) *Consumer {
		return &Consumer{
			Deliver: func([]*row.Tuple) bool { return true },
			Kept:    func() bool { asked[i]++; return keeps[i] },
		}
	}
	sub.Attach(consumer(0))
	sub.Attach(consumer(1))
	sub.Start()
	t.Cleanup(func() { sub.Stop(context.Background()) }) //nolint:errcheck // test end
	testwait.Until(t, "the subscription to connect", func() bool { return sub.Status().State == "connected" })
	push := func(want string) {
		t.Helper()
		r0, k0 := dec.recycled, dec.kept
		if !src.push([]*api.Message{{Payload: []byte(`{"seq":1}`)}, {Payload: []byte(`{"seq":2}`)}}) {
			t.Fatal("push refused")
		}
		got := "kept"
		if dec.recycled == r0+1 && dec.kept == k0 {
			got = "recycled"
		} else if dec.kept != k0+1 || dec.recycled != r0 {
			t.Fatalf("the batch ended %d times recycled, %d kept", dec.recycled-r0, dec.kept-k0)
		}
		if got != want {
			t.Fatalf("batch %s, want %s", got, want)
		}
		// The source may reuse the payloads exactly when the batch was
		// recycled (PayloadReleaser).
		if free := src.free(); free != (want == "recycled") {
			t.Fatalf("batch %s: the source was told its payloads are free: %v", got, free)
		}
	}
	push("recycled")
	keeps[1] = true
	push("kept")
	keeps[1] = false
	push("recycled")
	silent := sub.Attach(&Consumer{Deliver: func([]*row.Tuple) bool { return true }})
	push("kept")
	sub.Detach(silent)
	push("recycled")
	if asked != [2]int{5, 5} {
		t.Fatalf("consumers asked %v times, want 5 each", asked)
	}
	// A record that does not decode leaves the payloads to the GC (its
	// error may describe them), whatever the consumers kept.
	if !src.push([]*api.Message{{Payload: []byte(`{"seq":3}`)}, {Payload: []byte(`{"seq":`)}}) {
		t.Fatal("push refused")
	}
	if src.free() {
		t.Fatal("payloads reported free after a decode error")
	}
}

// releaseFake is a pushFake that is told when its payloads are free.
type releaseFake struct {
	pushFake
	free func() bool
}

func (r *releaseFake) ReleaseWith(free func() bool) { r.free = free }
