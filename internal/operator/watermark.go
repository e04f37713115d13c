package operator

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/rekuiper/rekuiper/internal/row"
)

// EventTime orders tuples by event time and generates watermarks: the
// watermark is the minimum over input streams of the largest timestamp seen,
// minus the late tolerance; it never decreases. Tuples older than the
// watermark on arrival are dropped and counted as late; the others are held
// until the watermark passes them and released in timestamp order, followed
// by a Watermark item.
type EventTime struct {
	Streams       []string
	LateTolerance int64

	st eventTimeState
}

type eventTimeState struct {
	Max       map[string]int64 `json:"max"`
	Watermark int64            `json:"watermark"`
	Held      []*row.Tuple     `json:"held"`
	Late      int64            `json:"late"`
}

func (e *EventTime) Name() string { return "watermark" }

func (e *EventTime) Process(ctx *Context, it Item, emit Emit) error {
	if it.Kind != Data || it.Tuples == nil || it.Input > 0 {
		forward(it, emit)
		return nil
	}
	if e.st.Max == nil {
		e.st.Max = map[string]int64{}
		e.st.Watermark = math.MinInt64
	}
	for _, t := range it.Tuples {
		if prev, ok := e.st.Max[t.Emitter]; !ok || t.Timestamp > prev {
			e.st.Max[t.Emitter] = t.Timestamp
		}
		if t.Timestamp < e.st.Watermark {
			e.st.Late++
			continue
		}
		e.st.Held = append(e.st.Held, t)
		e.advance(emit)
	}
	return nil
}

// Counters reports late drops for rule status and metrics.
func (e *EventTime) Counters() map[string]int64 {
	return map[string]int64{"late_records_dropped_total": e.st.Late}
}

func (e *EventTime) advance(emit Emit) {
	wm := int64(math.MaxInt64)
	for _, s := range e.Streams {
		m, ok := e.st.Max[s]
		if !ok {
			return
		}
		if m < wm {
			wm = m
		}
	}
	wm -= e.LateTolerance
	if wm <= e.st.Watermark {
		return
	}
	e.st.Watermark = wm
	sort.SliceStable(e.st.Held, func(i, j int) bool { return e.st.Held[i].Timestamp < e.st.Held[j].Timestamp })
	n := 0
	for n < len(e.st.Held) && e.st.Held[n].Timestamp <= wm {
		n++
	}
	if n > 0 {
		out := append([]*row.Tuple(nil), e.st.Held[:n]...)
		e.st.Held = append(e.st.Held[:0:0], e.st.Held[n:]...)
		emit(Item{Kind: Data, Tuples: out})
	}
	emit(Item{Kind: Watermark, TS: wm})
}

// Snapshot encodes maxima, watermark and held tuples.
func (e *EventTime) Snapshot() ([]byte, error) { return json.Marshal(&e.st) }

// Restore loads a snapshot.
func (e *EventTime) Restore(data []byte) error {
	var st eventTimeState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("restore watermark: %w", err)
	}
	e.st = st
	return nil
}
