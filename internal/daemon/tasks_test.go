package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRemoveTaskData: a deleted rule's task folders go, those of the rule
// itself (removeRuleData's) and of other rules stay.
func TestRemoveTaskData(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"rule_r%23p0", "rule_r%23p11", "cache/r%23p0", "rule_r%23r3", "cache/r%23r3", "rule_r", "cache/r", "rule_rx%23p0", "rule_r2%23p0"} {
		if err := os.MkdirAll(filepath.Join(dir, d, "checkpoints"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := removeTaskData(dir, "r"); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, pat := range []string{"rule_*", "cache/*"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, p := range m {
			rel, _ := filepath.Rel(dir, p)
			left = append(left, rel)
		}
	}
	slices.Sort(left)
	want := []string{"cache/r", "rule_r", "rule_r2%23p0", "rule_rx%23p0"}
	if !slices.Equal(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
}
