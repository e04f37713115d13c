package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKuiperTest(t *testing.T) {
	example := filepath.Join("..", "..", "examples", "rule-tests")
	t.Run("passing example", func(t *testing.T) {
		var out, errb bytes.Buffer
		if code := run([]string{"test", example}, &out, &errb); code != 0 {
			t.Fatalf("exit %d, stdout %s, stderr %s", code, out.String(), errb.String())
		}
		if !strings.Contains(out.String(), "2 passed, 0 failed") {
			t.Fatalf("unexpected summary: %s", out.String())
		}
	})
	t.Run("failing case prints a diff and exits 1", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(example, "high_temperature.json"))
		if err != nil {
			t.Fatal(err)
		}
		broken := strings.Replace(string(data), `"peak": 35.5`, `"peak": 99.5`, 1)
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte(broken), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		if code := run([]string{"test", dir}, &out, &errb); code != 1 {
			t.Fatalf("exit %d, want 1; stdout %s", code, out.String())
		}
		for _, want := range []string{"FAIL examples/high_temperature", "expected:", `"peak": 99.5`, `"peak": 35.5`} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out.String())
			}
		}
	})
	t.Run("without a path it replays the repository's corpus", func(t *testing.T) {
		t.Chdir(filepath.Join("..", ".."))
		var out, errb bytes.Buffer
		if code := run([]string{"test"}, &out, &errb); code != 0 {
			t.Fatalf("exit %d, stdout %s, stderr %s", code, out.String(), errb.String())
		}
		summary := out.String()
		if !strings.Contains(summary, " 0 failed") || strings.Contains(summary, " 0 passed") {
			t.Fatalf("unexpected summary: %s", summary)
		}
	})
	t.Run("usage errors exit 2", func(t *testing.T) {
		var out, errb bytes.Buffer
		if code := run([]string{"test"}, &out, &errb); code != 2 {
			t.Fatalf("exit %d, want 2", code)
		}
		if code := run([]string{"test", filepath.Join(t.TempDir(), "missing")}, &out, &errb); code != 2 {
			t.Fatalf("exit %d for a missing path, want 2", code)
		}
	})
}
