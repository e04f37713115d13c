// Package tap lets clients watch the results a running rule hands to its
// sinks, without slowing the rule down. A rule publishes every emission to
// the Hub; while nobody watches, publishing is one atomic load. Each
// subscriber has a small ring of emissions: when it falls behind, the
// oldest are dropped and counted, and the rule never waits.
package tap

import (
	"sync"
	"sync/atomic"
)

// DefaultRing is the number of emissions a subscriber may fall behind by
// before the oldest are dropped.
const DefaultRing = 64

// Hub routes rule emissions to subscribers. The zero value is not usable;
// call NewHub. A Hub is safe for concurrent use.
type Hub struct {
	// active counts subscribers over every rule: Publish returns at once
	// when it is zero.
	active atomic.Int64
	mu     sync.RWMutex
	subs   map[string]map[*Sub]struct{}
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{subs: map[string]map[*Sub]struct{}{}} }

// Active reports whether any rule is watched: when not, a rule need not
// build the rows it would publish.
func (h *Hub) Active() bool { return h != nil && h.active.Load() > 0 }

// Publish hands one emission of rule ruleID to its subscribers. It never
// blocks on a subscriber. The rows are shared, not copied: the caller must
// not change them afterwards (emissions are read-only once handed to the
// sinks).
func (h *Hub) Publish(ruleID string, rows []map[string]any) {
	if h == nil || h.active.Load() == 0 {
		return
	}
	h.mu.RLock()
	for s := range h.subs[ruleID] {
		s.push(rows)
	}
	h.mu.RUnlock()
}

// Watching reports whether rule ruleID has a subscriber.
func (h *Hub) Watching(ruleID string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.subs[ruleID]) > 0
}

// Subscribe watches rule ruleID (running or not yet) with a ring of ring
// emissions (DefaultRing when ring <= 0). Close the subscription when done.
func (h *Hub) Subscribe(ruleID string, ring int) *Sub {
	if ring <= 0 {
		ring = DefaultRing
	}
	s := &Sub{hub: h, rule: ruleID, ring: make([][]map[string]any, ring), wake: make(chan struct{}, 1)}
	h.mu.Lock()
	set := h.subs[ruleID]
	if set == nil {
		set = map[*Sub]struct{}{}
		h.subs[ruleID] = set
	}
	set[s] = struct{}{}
	h.mu.Unlock()
	h.active.Add(1)
	return s
}

// Sub is one subscriber's view of a rule's emissions.
type Sub struct {
	hub  *Hub
	rule string
	wake chan struct{}

	mu      sync.Mutex
	ring    [][]map[string]any
	head, n int
	dropped int64
	closed  bool
}

func (s *Sub) push(rows []map[string]any) {
	s.mu.Lock()
	if len(s.ring) == s.n {
		s.ring[s.head] = nil
		s.head = (s.head + 1) % len(s.ring)
		s.n--
		s.dropped++
	}
	s.ring[(s.head+s.n)%len(s.ring)] = rows
	s.n++
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Ready is signalled when emissions may be waiting; Take them.
func (s *Sub) Ready() <-chan struct{} { return s.wake }

// Take returns the emissions waiting, oldest first, and how many were
// dropped since the previous Take.
func (s *Sub) Take() (emissions [][]map[string]any, dropped int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	emissions = make([][]map[string]any, 0, s.n)
	for i := range s.n {
		j := (s.head + i) % len(s.ring)
		emissions = append(emissions, s.ring[j])
		s.ring[j] = nil
	}
	s.head, s.n = 0, 0
	dropped, s.dropped = s.dropped, 0
	return emissions, dropped
}

// Close ends the subscription; it is safe to call more than once.
func (s *Sub) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	h := s.hub
	h.mu.Lock()
	if set := h.subs[s.rule]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(h.subs, s.rule)
		}
	}
	h.mu.Unlock()
	h.active.Add(-1)
}
