package qualify

import (
	"maps"
	"testing"
)

// TestExpectedWindowsByPartition: with one watermark per partition, a
// partition whose newest record is further on closes more windows, and
// each partition's first window starts at its own first record.
func TestExpectedWindowsByPartition(t *testing.T) {
	recs := []Record{
		{Seq: 0, Key: "a", V: 1, TS: 1000},
		{Seq: 1, Key: "b", V: 2, TS: 1250},
		{Seq: 2, Key: "a", V: 3, TS: 1900},
		{Seq: 3, Key: "b", V: 4, TS: 2100},
		{Seq: 4, Key: "a", V: 5, TS: 2500},
		{Seq: 5, Key: "a", V: 6, TS: 3000},
	}
	part := func(r Record) int {
		if r.Key == "a" {
			return 0
		}
		return 1
	}
	got := ExpectedWindowsBy(recs, 1000, part)
	want := map[WindowKey]WindowValue{
		{Key: "a", Start: 1000}: {Count: 2, Sum: 4}, // closed by a's watermark 3000
		{Key: "a", Start: 2000}: {Count: 1, Sum: 5},
		{Key: "b", Start: 1250}: {Count: 1, Sum: 2}, // b's first window starts at its first record; b's watermark 2100 closes no other
	}
	if !maps.Equal(got, want) {
		t.Errorf("per partition: got %v, want %v", got, want)
	}
	// One partition: one watermark (3000) for both keys, first window at
	// the first record (1000, aligned).
	got = ExpectedWindows(recs, 1000)
	want = map[WindowKey]WindowValue{
		{Key: "a", Start: 1000}: {Count: 2, Sum: 4},
		{Key: "a", Start: 2000}: {Count: 1, Sum: 5},
		{Key: "b", Start: 1000}: {Count: 1, Sum: 2},
		{Key: "b", Start: 2000}: {Count: 1, Sum: 4},
	}
	if !maps.Equal(got, want) {
		t.Errorf("one partition: got %v, want %v", got, want)
	}
}
