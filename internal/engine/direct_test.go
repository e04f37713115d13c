package engine

import (
	"bytes"
	"context"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/runtime"
)

// goID is the calling goroutine's id, from its stack header.
func goID() uint64 {
	var b [64]byte
	s := b[:goruntime.Stack(b[:], false)]
	s = bytes.TrimPrefix(s, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(s[:bytes.IndexByte(s, ' ')]), 10, 64)
	return id
}

// inlineSink is a sink that may run on the operator goroutine
// (runtime.InlineSink): it encodes rows from slots into "held" and moves
// them to "sent" at EndBatch, recording the goroutines it ran on.
type inlineSink struct {
	inline bool
	codec  *format.JSONCodec

	mu         sync.Mutex
	held, sent []string
	ends       int
	goroutines map[uint64]bool
}

var (
	_ runtime.SlotSink   = (*inlineSink)(nil)
	_ runtime.InlineSink = (*inlineSink)(nil)
	_ runtime.BatchEnder = (*inlineSink)(nil)
)

func newInlineSink(inline bool) *inlineSink {
	return &inlineSink{inline: inline, codec: format.NewJSON(), goroutines: map[uint64]bool{}}
}

func (s *inlineSink) Name() string { return "inline" }
func (s *inlineSink) Inline() bool { return s.inline }

func (s *inlineSink) Collect(_ context.Context, rows []map[string]any) error {
	buf, err := s.codec.Encode(rows)
	s.add(buf)
	return err
}

func (s *inlineSink) CollectSlots(_ context.Context, rows *row.SlotRows) error {
	buf, err := s.codec.EncodeSlots(rows, nil)
	s.add(buf)
	return err
}

func (s *inlineSink) add(buf []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.goroutines[goID()] = true
	s.held = append(s.held, string(buf))
}

func (s *inlineSink) EndBatch() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ends++
	s.sent = append(s.sent, s.held...)
	s.held = s.held[:0]
	return nil
}

func (s *inlineSink) state() (sent, held, ends int, goroutines map[uint64]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sent), len(s.held), s.ends, s.goroutines
}

// TestDirectRule: a filter rule at qos 0 whose only sink is inline runs on
// the sender's goroutine: when Send returns, the rows it passed are encoded
// and their batch ended, on that goroutine, in order. A sink that is not
// inline gets its own goroutine and the rows arrive in the same order.
func TestDirectRule(t *testing.T) {
	ds := decodedDeliveries(t)
	for _, inline := range []bool{true, false} {
		t.Run("inline="+strconv.FormatBool(inline), func(t *testing.T) {
			tr := runtime.NewTracker()
			sink := newInlineSink(inline)
			r := build(t, filterSQL, clock.NewVirtual(0), sink, tr).Rule
			r.Start()
			me := goID()
			for i, d := range ds {
				if !r.Send(operator.Item{Kind: operator.Data, Tuples: d}) {
					t.Fatal("rule refused an item")
				}
				if inline {
					sent, held, ends, _ := sink.state()
					if held != 0 || ends != i+1 || sent == 0 {
						t.Fatalf("after Send %d: %d sent, %d held, %d batch ends; want all sent, one end per Send", i, sent, held, ends)
					}
				}
			}
			tr.Wait()
			r.Stop()
			sent, held, ends, gs := sink.state()
			if held != 0 || ends == 0 {
				t.Fatalf("%d payloads held after stop, %d batch ends", held, ends)
			}
			if inline != (len(gs) == 1 && gs[me]) {
				t.Fatalf("sink ran on goroutines %v, sender is %d (inline %v)", gs, me, inline)
			}
			want := newInlineSink(false)
			for _, d := range ds {
				if err := filterOnly(t, d, want); err != nil {
					t.Fatal(err)
				}
			}
			if sent != len(want.held) {
				t.Fatalf("%d payloads, want one per passing row (%d)", sent, len(want.held))
			}
			for i := range sink.sent {
				if sink.sent[i] != want.held[i] {
					t.Fatalf("payload %d = %s, want %s", i, sink.sent[i], want.held[i])
				}
			}
		})
	}
}

// filterOnly encodes what filterSQL makes of one delivery, as the rule
// should: an emission of deviceId and temperature for each row with
// temperature > 30.
func filterOnly(t *testing.T, d []*row.Tuple, into *inlineSink) error {
	t.Helper()
	for _, tu := range d {
		temp, _ := tu.Value("", "temperature")
		f, ok := temp.(float64)
		if !ok || f <= 30 {
			continue
		}
		dev, _ := tu.Value("", "deviceId")
		if err := into.Collect(context.Background(), []map[string]any{{"deviceId": dev, "temperature": temp}}); err != nil {
			return err
		}
	}
	return nil
}

// panicSink is an inline sink that panics on its second emission.
type panicSink struct {
	inlineSink
	n int
}

func (s *panicSink) CollectSlots(ctx context.Context, rows *row.SlotRows) error {
	s.n++
	if s.n == 2 {
		panic("sink exploded")
	}
	return s.inlineSink.CollectSlots(ctx, rows)
}

// TestDirectRuleSinkPanic: a panic in the sink of a rule that runs on the
// sender's goroutine does not reach the sender: Send returns, the rule's
// owner is told once, the sink's metrics record it, and later items are
// discarded without calling the sink again.
func TestDirectRuleSinkPanic(t *testing.T) {
	defs, err := ParseDefs([]string{benchStream})
	if err != nil {
		t.Fatal(err)
	}
	sink := &panicSink{inlineSink: *newInlineSink(true)}
	var mu sync.Mutex
	var got []string
	built, err := Build(Spec{ID: "p", SQL: filterSQL, Defs: defs, Funcs: function.Builtins(), Clock: clock.NewVirtual(0),
		Sinks: []runtime.Sink{sink},
		OnPanic: func(e *panics.Error) {
			mu.Lock()
			got = append(got, e.Error())
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	r := built.Rule
	r.Start()
	for _, d := range decodedDeliveries(t) {
		r.Send(operator.Item{Kind: operator.Data, Tuples: d})
	}
	r.Stop()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || !strings.Contains(got[0], "sink exploded") {
		t.Fatalf("OnPanic calls: %q, want one with the sink's panic", got)
	}
	if sink.n != 2 {
		t.Fatalf("sink called %d times, want 2 (nothing after the panic)", sink.n)
	}
	if m := r.SinkMetrics[0]; m.Exceptions.Load() != 1 {
		t.Fatalf("sink exceptions %d, want 1", m.Exceptions.Load())
	}
}

// TestDirectRuleHoldsUntilEndDelivery: with EndsDeliveries (records from a
// stream subscription, which calls EndDelivery once a delivery reached
// every rule), a direct rule's sink holds the output of its Sends and sends
// it at EndDelivery; Stop sends what is still held.
func TestDirectRuleHoldsUntilEndDelivery(t *testing.T) {
	defs, err := ParseDefs([]string{benchStream})
	if err != nil {
		t.Fatal(err)
	}
	sink := newInlineSink(true)
	built, err := Build(Spec{ID: "h", SQL: filterSQL, Defs: defs, Funcs: function.Builtins(), Clock: clock.NewVirtual(0),
		Sinks: []runtime.Sink{sink}, EndsDeliveries: true})
	if err != nil {
		t.Fatal(err)
	}
	r := built.Rule
	r.Start()
	ds := decodedDeliveries(t)
	for i, d := range ds {
		r.Send(operator.Item{Kind: operator.Data, Tuples: d[:len(d)/2]})
		r.Send(operator.Item{Kind: operator.Data, Tuples: d[len(d)/2:]})
		sent, held, ends, _ := sink.state()
		if held == 0 || ends != i {
			t.Fatalf("delivery %d before EndDelivery: %d held, %d batch ends; want output held, %d ends", i, held, ends, i)
		}
		if i == len(ds)-1 {
			break // Stop must send the last one
		}
		r.EndDelivery()
		if _, held2, ends2, _ := sink.state(); held2 != 0 || ends2 != i+1 {
			t.Fatalf("delivery %d after EndDelivery: %d held (of %d sent), %d batch ends", i, held2, sent, ends2)
		}
	}
	r.Stop()
	if _, held, ends, _ := sink.state(); held != 0 || ends != len(ds) {
		t.Fatalf("after Stop: %d held, %d batch ends, want 0 and %d", held, ends, len(ds))
	}
}

// inlineEncodeSink is encodeSink as an inline sink that holds its writes.
type inlineEncodeSink struct {
	encodeSink
	ends int
}

func (s *inlineEncodeSink) Inline() bool    { return true }
func (s *inlineEncodeSink) EndBatch() error { s.ends++; return nil }

// TestDirectRuleAllocs: the direct path (operators and sink on the
// sender's goroutine) allocates nothing per message either, as
// TestFilterPathAllocs requires of the runtime's goroutines.
func TestDirectRuleAllocs(t *testing.T) {
	sink := &inlineEncodeSink{encodeSink: encodeSink{codec: format.NewJSON()}}
	r := build(t, filterSQL, clock.NewVirtual(0), sink, nil).Rule
	ds := decodedDeliveries(t)
	r.Start()
	defer r.Stop()
	requireAllocsPerMsg(t, 0.1, 1, func(i int) {
		r.Send(operator.Item{Kind: operator.Data, Tuples: ds[i%len(ds)]})
	}, func(t *testing.T) {
		if sink.n == 0 || sink.ends == 0 {
			t.Fatalf("the sink encoded %d bytes, ended %d batches", sink.n, sink.ends)
		}
	})
}
