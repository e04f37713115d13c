package metrics

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
)

// History defaults: one hour at ten-second resolution.
const (
	DefaultInterval = 10 * time.Second
	DefaultPoints   = 360
)

// Point is one interval of a rule's (or the node's) activity: the records
// its sources read, its sinks delivered and the errors counted anywhere in
// the rule during the interval that ended at Time (Unix milliseconds).
type Point struct {
	Time       int64 `json:"time"`
	RecordsIn  int64 `json:"recordsIn"`
	RecordsOut int64 `json:"recordsOut"`
	Errors     int64 `json:"errors"`
}

// History keeps a bounded window of per-rule and node-wide activity,
// sampled from the rules' status counters. One timer drives every rule.
// A rule with activity in the window costs a ring of Points values (about
// 8.6 KB at the defaults); a rule with none in the window (an idle rule)
// holds no ring, so thousands of idle rules cost a few dozen bytes each.
// A ring is freed when the rule is deleted or has been idle for the whole
// window. The node-wide series sums every rule, including rules since
// deleted.
type History struct {
	rules    Rules
	clock    clock.Clock
	interval time.Duration

	mu    sync.Mutex
	seq   int64   // samples taken
	times []int64 // ring of sample times, shared by every series
	node  series
	byID  map[string]*series
	timer clock.Timer
	quit  bool
}

// series is one ring of deltas aligned with History.times, and the
// counters of the previous sample they are taken from. vals is nil while
// every delta in the window is zero.
type series struct {
	start  int64 // seq of the first sample the series has
	active int64 // seq of the last sample with a non-zero delta
	vals   [][3]int64
	last   [3]int64
}

// HistoryConfig configures a History. Rules is required.
type HistoryConfig struct {
	Rules Rules
	// Clock drives sampling. Default wall clock.
	Clock clock.Clock
	// Interval between samples (default DefaultInterval) and Points kept
	// per series (default DefaultPoints).
	Interval time.Duration
	Points   int
}

// NewHistory returns a History; nothing is sampled until Start (or Sample).
func NewHistory(cfg HistoryConfig) *History {
	if cfg.Clock == nil {
		cfg.Clock = clock.Wall{}
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Points <= 0 {
		cfg.Points = DefaultPoints
	}
	return &History{
		rules: cfg.Rules, clock: cfg.Clock, interval: cfg.Interval,
		times: make([]int64, cfg.Points), node: series{vals: make([][3]int64, cfg.Points)},
		byID: map[string]*series{},
	}
}

// Interval is the time between two samples.
func (h *History) Interval() time.Duration { return h.interval }

// Start samples every interval on a clock timer until Stop; no goroutine
// runs between samples.
func (h *History) Start() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.timer == nil && !h.quit {
		h.timer = h.clock.AfterFunc(h.interval, h.tick)
	}
}

// Stop ends sampling; a sample under way completes.
func (h *History) Stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.quit = true
	if h.timer != nil {
		h.timer.Stop()
	}
}

func (h *History) tick() {
	h.Sample()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.quit {
		h.timer = h.clock.AfterFunc(h.interval, h.tick)
	}
}

// Sample reads every rule's counters now and records one point per rule
// and one for the node. A counter that went down (the rule restarted)
// counts from zero.
func (h *History) Sample() {
	now := h.clock.Now().UnixMilli()
	cur := map[string][3]int64{}
	for _, brief := range h.rules.List() {
		var c [3]int64
		if brief.State == rulemgr.StateRunning {
			if st, err := h.rules.Status(brief.ID); err == nil {
				c = counters(st.Metrics)
			}
		}
		cur[brief.ID] = c
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	i := int(h.seq % int64(len(h.times)))
	h.times[i] = now
	var total [3]int64
	for id, c := range cur {
		s := h.byID[id]
		if s == nil {
			s = &series{start: h.seq, active: -1}
			h.byID[id] = s
		}
		var d [3]int64
		for k := range c {
			d[k] = c[k] - s.last[k]
			if d[k] < 0 {
				d[k] = c[k]
			}
			total[k] += d[k]
		}
		s.last = c
		if d != ([3]int64{}) {
			if s.vals == nil {
				s.vals = make([][3]int64, len(h.times))
			}
			s.active = h.seq
		} else if s.vals != nil && h.seq-s.active >= int64(len(h.times)) {
			s.vals = nil // idle for the whole window: every kept delta is zero
		}
		if s.vals != nil {
			s.vals[i] = d
		}
	}
	for id := range h.byID {
		if _, ok := cur[id]; !ok {
			delete(h.byID, id)
		}
	}
	h.node.vals[i] = total
	h.seq++
}

// counters sums a rule's status metrics: records read by its sources,
// delivered by its sinks, and exceptions anywhere.
func counters(m map[string]any) [3]int64 {
	var c [3]int64
	for k, v := range m {
		n, ok := v.(int64)
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(k, "source_") && strings.HasSuffix(k, "_records_in_total"):
			c[0] += n
		case strings.HasPrefix(k, "sink_") && strings.HasSuffix(k, "_records_out_total"):
			c[1] += n
		case strings.HasSuffix(k, "_exceptions_total"):
			c[2] += n
		}
	}
	return c
}

// Rule returns rule id's points, oldest first; ok is false when the rule
// has not been sampled (unknown, or created since the last sample).
func (h *History) Rule(id string) (points []Point, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.byID[id]
	if s == nil {
		return nil, false
	}
	return h.points(s), true
}

// Node returns the node-wide points, oldest first.
func (h *History) Node() []Point {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.points(&h.node)
}

func (h *History) points(s *series) []Point {
	from := max(s.start, h.seq-int64(len(h.times)))
	out := make([]Point, 0, h.seq-from)
	for q := from; q < h.seq; q++ {
		i := int(q % int64(len(h.times)))
		var v [3]int64
		if s.vals != nil {
			v = s.vals[i]
		}
		out = append(out, Point{Time: h.times[i], RecordsIn: v[0], RecordsOut: v[1], Errors: v[2]})
	}
	return out
}

// Run samples until ctx ends.
func (h *History) Run(ctx context.Context) {
	h.Start()
	<-ctx.Done()
	h.Stop()
}
