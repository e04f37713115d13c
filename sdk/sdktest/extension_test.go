package sdktest_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/sdk"
	"github.com/rekuiper/rekuiper/sdk/sdktest"
)

// This file is an extension as its author would test it: a source and a
// sink over an in-process message hub (the hub stands for their server)
// and a lookup table, registered by Register and checked by sdktest.

// hub carries payloads by topic.
type hub struct {
	mu     sync.Mutex
	topics map[string]chan []byte
}

func (h *hub) topic(name string) chan []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.topics == nil {
		h.topics = map[string]chan []byte{}
	}
	if h.topics[name] == nil {
		h.topics[name] = make(chan []byte, 1000)
	}
	return h.topics[name]
}

// restart stands for a restart of the server: the topic's channel is
// closed, so that its readers fail and connect again, and a new one
// replaces it, losing what was queued.
func (h *hub) restart(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch := h.topics[name]; ch != nil {
		close(ch)
	}
	h.topics[name] = make(chan []byte, 1000)
}

// pipeSource reads a hub topic.
type pipeSource struct {
	h     *hub
	topic string
	ch    chan []byte
}

func (s *pipeSource) Connect(context.Context) error { s.ch = s.h.topic(s.topic); return nil }
func (s *pipeSource) Close(context.Context) error   { return nil }
func (s *pipeSource) Read(ctx context.Context) (*api.Message, error) {
	if s.ch == nil {
		return nil, errors.New("pipe: not connected")
	}
	select {
	case b, ok := <-s.ch:
		if !ok {
			return nil, errors.New("pipe: the hub restarted")
		}
		return &api.Message{Payload: b}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// pipeSink writes to a hub topic.
type pipeSink struct {
	h     *hub
	topic string
}

func (s *pipeSink) Connect(context.Context) error { return nil }
func (s *pipeSink) Close(context.Context) error   { return nil }
func (s *pipeSink) Write(ctx context.Context, m *api.SinkMessage) error {
	select {
	case s.h.topic(s.topic) <- m.Payload:
		return nil
	case <-ctx.Done():
		return api.Retryable(ctx.Err())
	}
}

// table is a lookup source over fixed rows, matched by "id".
type table struct{ rows []map[string]any }

func (t table) Connect(context.Context) error { return nil }
func (t table) Close(context.Context) error   { return nil }
func (t table) Lookup(_ context.Context, keys map[string]any) ([]map[string]any, error) {
	var out []map[string]any
	for _, r := range t.rows {
		if fmt.Sprint(r["id"]) == fmt.Sprint(keys["id"]) {
			out = append(out, maps.Clone(r))
		}
	}
	return out, nil
}

// register is the extension's Register function, over h.
func register(h *hub) sdk.RegisterFunc {
	return func(r *sdk.Registry) error {
		topic := sdk.Spec{Props: []sdk.Prop{{Name: "topic", Type: sdk.TypeString, Required: true, Target: true}}}
		if err := r.RegisterSource("pipe", topic, func(p map[string]any, _ sdk.Deps) (api.Source, error) {
			return &pipeSource{h: h, topic: p["topic"].(string)}, nil
		}); err != nil {
			return err
		}
		if err := r.RegisterSink("pipe", topic, func(p map[string]any, _ sdk.Deps) (api.Sink, error) {
			return &pipeSink{h: h, topic: p["topic"].(string)}, nil
		}); err != nil {
			return err
		}
		return r.RegisterLookup("table", sdk.Spec{Props: []sdk.Prop{
			{Name: "rows", Type: sdk.TypeList, Required: true},
		}}, func(p map[string]any, _ sdk.Deps) (sdk.LookupSource, error) {
			var rows []map[string]any
			for i, e := range p["rows"].([]any) {
				r, ok := e.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("table: rows[%d] is not an object", i)
				}
				rows = append(rows, r)
			}
			return table{rows}, nil
		})
	}
}

// producer publishes to the topic the source under test reads.
type producer struct {
	h     *hub
	topic string
}

func (p *producer) Produce(t *testing.T, payloads [][]byte) {
	for _, b := range payloads {
		p.h.topic(p.topic) <- b
	}
}

func (p *producer) Restart(*testing.T) { p.h.restart(p.topic) }

// reader reads the topic the sink under test writes.
type reader struct {
	h     *hub
	topic string
}

func (r *reader) Seqs(t *testing.T, want int, timeout time.Duration) []int64 {
	var got []int64
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for len(got) < want {
		select {
		case b := <-r.h.topic(r.topic):
			n, err := sdktest.DecodeSeq(&api.Message{Payload: b})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, n)
		case <-timer.C:
			return got
		}
	}
	return got
}

func (r *reader) Restart(*testing.T) { r.h.restart(r.topic) }

func (r *reader) Reset(*testing.T) {
	for {
		select {
		case <-r.h.topic(r.topic):
		default:
			return
		}
	}
}

func registry(t *testing.T, h *hub) *sdk.Registry {
	t.Helper()
	r := sdk.NewRegistry()
	if err := register(h)(r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestExtensionSource(t *testing.T) {
	h := &hub{}
	r := registry(t, h)
	p := &producer{h: h}
	sdktest.RunSource(t, sdktest.Source{
		New: func(props map[string]any) (api.Source, error) { return r.NewSource("pipe", props, sdk.Deps{}) },
		Props: func(t *testing.T) map[string]any {
			p.topic = t.Name() // a topic of its own for every check
			return map[string]any{"topic": p.topic}
		},
		Invalid: []sdktest.InvalidCase{
			{Name: "no topic", Props: map[string]any{}, WantErr: `"topic" is required`},
			{Name: "unknown property", Props: map[string]any{"topic": "t", "qos": 1}, WantErr: "unknown properties: qos"},
		},
	}, p)
}

func TestExtensionSink(t *testing.T) {
	h := &hub{}
	r := registry(t, h)
	rd := &reader{h: h, topic: "out"}
	sdktest.RunSink(t, sdktest.Sink{
		New:     func(props map[string]any) (api.Sink, error) { return r.NewSink("pipe", props, sdk.Deps{}) },
		Props:   func(*testing.T) map[string]any { return map[string]any{"topic": rd.topic} },
		Invalid: []sdktest.InvalidCase{{Name: "no topic", Props: map[string]any{}, WantErr: `"topic" is required`}},
	}, rd)
}

func TestExtensionLookup(t *testing.T) {
	r := registry(t, &hub{})
	rows := []any{
		map[string]any{"id": 1, "name": "pump"},
		map[string]any{"id": 2, "name": "valve"},
		map[string]any{"id": 1, "name": "motor"},
	}
	sdktest.RunLookup(t, sdktest.Lookup{
		New:     func(props map[string]any) (api.LookupSource, error) { return r.NewLookup("table", props, sdk.Deps{}) },
		Props:   func(*testing.T) map[string]any { return map[string]any{"rows": rows} },
		Key:     map[string]any{"id": 1},
		Want:    []map[string]any{{"id": 1, "name": "motor"}, {"id": 1, "name": "pump"}},
		Missing: map[string]any{"id": 3},
		Invalid: []sdktest.InvalidCase{{Name: "not objects", Props: map[string]any{"rows": []any{"x"}}, WantErr: "not an object"}},
	})
}
