package catalog

import (
	"context"
	"testing"
	"time"
)

// TestRuleStartMarkersSurviveReopen: a marker written and not cleared is
// there after the store is reopened (as after kill -9); a cleared one is not.
// Markers belong to their node: another node's are neither read nor
// cleared.
func TestRuleStartMarkersSurviveReopen(t *testing.T) {
	forEachBackend(t, testRuleStartMarkers)
}

func testRuleStartMarkers(t *testing.T, b backend) {
	ctx := context.Background()
	target := b.target(t)
	s, err := b.open(ctx, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := s.(RuleStartMarker)
	at := time.UnixMilli(t0).UTC()
	for _, id := range []string{"a", "b"} {
		if err := m.MarkRuleStarting(ctx, "n1", id, at); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"b", "c"} {
		if err := m.MarkRuleStarting(ctx, "n2", id, at.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.ClearRuleStarting(ctx, "n1", "b"); err != nil {
		t.Fatal(err)
	}
	if err := m.ClearRuleStarting(ctx, "n1", "never-marked"); err != nil {
		t.Fatalf("clearing an absent marker: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := New(ctx, b.openAt(t, target, nil))
	if err != nil {
		t.Fatal(err)
	}
	marks, err := c.RuleStartMarks(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if len(marks) != 1 || !marks["a"].Equal(at) {
		t.Fatalf("n1's markers after reopen = %v; want only a at %v", marks, at)
	}
	marks, err = c.RuleStartMarks(ctx, "n2")
	if err != nil {
		t.Fatal(err)
	}
	if len(marks) != 2 || !marks["b"].Equal(at.Add(time.Second)) || !marks["c"].Equal(at.Add(time.Second)) {
		t.Fatalf("n2's markers after reopen = %v; want b and c, untouched by n1", marks)
	}
}
