package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPreviousCrash(t *testing.T) {
	dir := t.TempDir()
	if got, err := previousCrash(dir); got != "" || err != nil {
		t.Fatalf("no report: %q, %v", got, err)
	}
	for report, want := range map[string]string{
		"panic: boom\n\ngoroutine 1 [running]:\n":  "panic: boom; the report is in ",
		"\ngoroutine 7 [running]:\nsync.fatal()\n": "fatal error; the report is in ",
		"":     "",
		"\n\n": "",
	} {
		if err := os.WriteFile(filepath.Join(dir, crashFile), []byte(report), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := previousCrash(dir)
		if err != nil || !strings.HasPrefix(got, want) || (want == "") != (got == "") {
			t.Errorf("report %q: %q, %v; want %q…", report, got, err, want)
		}
		if want != "" {
			kept, _ := os.ReadFile(filepath.Join(dir, "crash.prev.log"))
			if strings.TrimSpace(string(kept)) != strings.TrimSpace(report) {
				t.Errorf("crash.prev.log %q; want the report", kept)
			}
			if _, err := os.Stat(filepath.Join(dir, crashFile)); !os.IsNotExist(err) {
				t.Error("the report was not moved away")
			}
		}
	}
}
