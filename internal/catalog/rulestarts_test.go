package catalog

import (
	"context"
	"testing"
	"time"
)

// TestRuleStartMarkersSurviveReopen: a marker written and not cleared is
// there after the store is reopened (as after kill -9); a cleared one is
// not. A batch of changes applies in order.
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
	// One transaction per node, applied in order: n1's d is marked then
	// cleared, its e cleared then marked.
	n1 := []RuleStart{{ID: "a", At: at}, {ID: "b", At: at}, {ID: "d", At: at}, {ID: "d", Clear: true},
		{ID: "e", Clear: true}, {ID: "e", At: at}}
	if err := m.WriteRuleStarts(ctx, "n1", n1); err != nil {
		t.Fatal(err)
	}
	n2 := []RuleStart{{ID: "b", At: at.Add(time.Second)}, {ID: "c", At: at.Add(time.Second)}}
	if err := m.WriteRuleStarts(ctx, "n2", n2); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteRuleStarts(ctx, "n1", []RuleStart{{ID: "b", Clear: true}, {ID: "e", Clear: true}, {ID: "never-marked", Clear: true}}); err != nil {
		t.Fatalf("clearing (one marker absent): %v", err)
	}
	if err := m.WriteRuleStarts(ctx, "n1", nil); err != nil {
		t.Fatalf("no changes: %v", err)
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
