package catalog

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestRuleStartMarkersSurviveReopen: a marker written and not cleared is
// there after the store is reopened (as after kill -9); a cleared one is not.
func TestRuleStartMarkersSurviveReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "data", DefaultFileName)
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(t0).UTC()
	for _, id := range []string{"a", "b"} {
		if err := s.MarkRuleStarting(ctx, id, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ClearRuleStarting(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.ClearRuleStarting(ctx, "never-marked"); err != nil {
		t.Fatalf("clearing an absent marker: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := New(ctx, openStore(t, path, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	marks, err := c.RuleStartMarks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(marks) != 1 || !marks["a"].Equal(at) {
		t.Fatalf("markers after reopen = %v; want only a at %v", marks, at)
	}
}
