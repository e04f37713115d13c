package operator

import (
	"fmt"
	"math"
	"sort"

	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/value"
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
	Max       map[string]int64
	Watermark int64
	Held      []*row.Tuple
	Late      int64
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

// Snapshot encodes maxima, watermark, late count and held tuples.
func (e *EventTime) Snapshot() ([]byte, error) {
	max := make(map[string]any, len(e.st.Max))
	for k, v := range e.st.Max {
		max[k] = v
	}
	buf := value.AppendValue([]byte{1}, map[string]any{"max": max, "watermark": e.st.Watermark, "late": e.st.Late, "init": e.st.Max != nil})
	return row.AppendTuples(buf, e.st.Held), nil
}

// Restore loads a snapshot.
func (e *EventTime) Restore(data []byte) error {
	if len(data) == 0 || data[0] != 1 {
		return fmt.Errorf("restore watermark: unsupported snapshot version")
	}
	r := value.NewReader(data[1:])
	m, _ := r.Value().(map[string]any)
	var st eventTimeState
	if init, _ := m["init"].(bool); init {
		st.Max = map[string]int64{}
		for k, v := range asObject(m["max"]) {
			if i, ok := v.(int64); ok {
				st.Max[k] = i
			}
		}
	}
	st.Watermark, _ = m["watermark"].(int64)
	st.Late, _ = m["late"].(int64)
	st.Held = row.ReadTuples(r)
	if err := r.Err(); err != nil {
		return fmt.Errorf("restore watermark: %w", err)
	}
	e.st = st
	return nil
}

func asObject(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
