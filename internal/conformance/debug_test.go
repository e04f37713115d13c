package conformance

import (
	"os"
	"testing"

	"github.com/rekuiper/rekuiper/internal/function"
)

// TestOne replays the case file named by REKUIPER_CASE and prints what the
// rule emitted; it is a debugging aid and skips when the variable is unset.
func TestOne(t *testing.T) {
	path := os.Getenv("REKUIPER_CASE")
	if path == "" {
		t.Skip("set REKUIPER_CASE to a case file")
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Replay(c, c.Rule.Options, function.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("expected: %s", Show(c.Expected))
	t.Logf("actual:   %s", Show(out))
}
