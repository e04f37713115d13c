package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestQuickstart runs the README's quick start and checks that both rules
// produced results through the embedded broker.
func TestQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for several seconds")
	}
	var out bytes.Buffer
	if err := run(context.Background(), 7*time.Second, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{"Stream sensors is created.", "Rule averages was created successfully.", "demo/out/averages", `"readings":`, "demo/out/hot/"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}
