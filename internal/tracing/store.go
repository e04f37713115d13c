package tracing

import (
	"context"
	"slices"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// MaxSpansPerTrace bounds the spans kept for one trace; later ones are
// dropped.
const MaxSpansPerTrace = 512

// LocalSpan is a stored span in eKuiper's JSON shape (GET /trace/{id}).
type LocalSpan struct {
	Name         string         `json:"name"`
	TraceID      string         `json:"traceID"`
	SpanID       string         `json:"spanID"`
	ParentSpanID string         `json:"parentSpanID,omitempty"`
	Attribute    map[string]any `json:"attribute,omitempty"`
	Links        []Link         `json:"links,omitempty"`
	StartTime    time.Time      `json:"startTime"`
	EndTime      time.Time      `json:"endTime"`
	RuleID       string         `json:"ruleID"`
	ChildSpan    []*LocalSpan   `json:"ChildSpan"`
}

// Link is a link of a span to another trace.
type Link struct {
	TraceID string `json:"TraceID"`
}

// Store keeps the spans of the last capacity traces in memory. Traces are
// evicted oldest first, whole.
type Store struct {
	mu       sync.Mutex
	capacity int
	ring     []string // trace ids in arrival order, from head
	head, n  int
	traces   map[string]*stored
}

type stored struct {
	rule  string
	spans []LocalSpan
}

// NewStore returns a store of capacity traces (at least 1).
func NewStore(capacity int) *Store {
	capacity = max(capacity, 1)
	return &Store{capacity: capacity, ring: make([]string, capacity), traces: map[string]*stored{}}
}

// Add stores a span, evicting the oldest trace when a new one does not fit.
func (s *Store) Add(sp LocalSpan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.traces[sp.TraceID]
	if t == nil {
		if s.n == s.capacity {
			delete(s.traces, s.ring[s.head])
			s.head = (s.head + 1) % s.capacity
			s.n--
		}
		s.ring[(s.head+s.n)%s.capacity] = sp.TraceID
		s.n++
		t = &stored{}
		s.traces[sp.TraceID] = t
	}
	if len(t.spans) >= MaxSpansPerTrace {
		return
	}
	if t.rule == "" {
		t.rule = sp.RuleID
	}
	t.spans = append(t.spans, sp)
}

// TraceIDs returns the ids of rule's stored traces, newest first, at most
// limit (all when limit < 1).
func (s *Store) TraceIDs(rule string, limit int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []string{}
	for i := s.n - 1; i >= 0; i-- {
		id := s.ring[(s.head+i)%s.capacity]
		if s.traces[id].rule != rule {
			continue
		}
		out = append(out, id)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out
}

// Trace returns the span tree of trace id: its root span (the earliest span
// whose parent is not stored) with ChildSpan filled, children in start
// order. False when the trace is not stored.
func (s *Store) Trace(id string) (*LocalSpan, bool) {
	s.mu.Lock()
	t := s.traces[id]
	var spans []LocalSpan
	if t != nil {
		spans = slices.Clone(t.spans)
	}
	s.mu.Unlock()
	if len(spans) == 0 {
		return nil, false
	}
	slices.SortStableFunc(spans, func(a, b LocalSpan) int { return a.StartTime.Compare(b.StartTime) })
	byID := make(map[string]*LocalSpan, len(spans))
	for i := range spans {
		spans[i].ChildSpan = []*LocalSpan{}
		byID[spans[i].SpanID] = &spans[i]
	}
	var root *LocalSpan
	for i := range spans {
		sp := &spans[i]
		if p, ok := byID[sp.ParentSpanID]; ok && p != sp {
			p.ChildSpan = append(p.ChildSpan, sp)
		} else if root == nil {
			root = sp
		}
	}
	return root, true
}

// storeProcessor saves every ended span into the store.
type storeProcessor struct{ store *Store }

var _ sdktrace.SpanProcessor = storeProcessor{}

func (storeProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (storeProcessor) Shutdown(context.Context) error                  { return nil }
func (storeProcessor) ForceFlush(context.Context) error                { return nil }

func (p storeProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	sp := LocalSpan{
		Name:         s.Name(),
		TraceID:      s.SpanContext().TraceID().String(),
		SpanID:       s.SpanContext().SpanID().String(),
		ParentSpanID: s.Parent().SpanID().String(),
		StartTime:    s.StartTime(),
		EndTime:      s.EndTime(),
	}
	if attrs := s.Attributes(); len(attrs) > 0 {
		sp.Attribute = make(map[string]any, len(attrs))
		for _, a := range attrs {
			sp.Attribute[string(a.Key)] = a.Value.AsInterface()
			if a.Key == RuleKey {
				sp.RuleID = a.Value.AsString()
			}
		}
	}
	for _, l := range s.Links() {
		sp.Links = append(sp.Links, Link{TraceID: l.SpanContext.TraceID().String()})
	}
	p.store.Add(sp)
}
