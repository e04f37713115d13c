package rule

import (
	"strings"
	"testing"
)

func TestSourceLogSyncOption(t *testing.T) {
	for _, v := range []string{"", "none", "periodic", "always"} {
		if _, err := ParseOptions(Options{}, map[string]any{"sourceLogSync": v}); err != nil {
			t.Errorf("sourceLogSync %q: %v", v, err)
		}
	}
	_, err := ParseOptions(Options{}, map[string]any{"sourceLogSync": "sometimes"})
	if err == nil || !strings.Contains(err.Error(), "sourceLogSync") {
		t.Fatalf("err = %v, want one naming sourceLogSync", err)
	}
}
