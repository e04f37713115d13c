package server

import "testing"

func TestTapQueueDropsOldest(t *testing.T) {
	q := &tapQueue{wake: make(chan struct{}, 1)}
	for i := range tapBuffer + 5 {
		q.push(map[string]any{"i": i})
	}
	rows, dropped := q.take()
	i := func(k int) any { return rows[k].(map[string]any)["i"] }
	if dropped != 5 || len(rows) != tapBuffer || i(0) != 5 || i(len(rows)-1) != tapBuffer+4 {
		t.Fatalf("took %d rows from %v, dropped %d; want %d rows from 5, dropped 5", len(rows), i(0), dropped, tapBuffer)
	}
	if rows, dropped := q.take(); len(rows) != 0 || dropped != 0 {
		t.Fatalf("second take: %d rows, %d dropped", len(rows), dropped)
	}
}
