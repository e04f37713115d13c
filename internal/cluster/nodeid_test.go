package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNodeIDIsCreatedOnceAndKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	id, err := LoadNodeID(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(id) != 32 {
		t.Fatalf("node id %q, want 32 hex digits", id)
	}
	again, err := LoadNodeID(dir)
	if err != nil || again != id {
		t.Fatalf("second load %q (%v), want %q", again, err, id)
	}
	b, err := os.ReadFile(filepath.Join(dir, nodeIDFile))
	if err != nil || strings.TrimSpace(string(b)) != id {
		t.Fatalf("file %q (%v)", b, err)
	}
	other, err := LoadNodeID(t.TempDir())
	if err != nil || other == id {
		t.Fatalf("another data folder got %q (%v)", other, err)
	}
	if err := os.WriteFile(filepath.Join(dir, nodeIDFile), []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadNodeID(dir); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty node id file: %v", err)
	}
}
