package differential

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/conformance"
	"github.com/rekuiper/rekuiper/internal/function"
)

// TestSessionTimeoutLostRows: the difference of the recorded case where
// eKuiper loses rows at a processing-time session's timeout is put down to
// that quirk; rows a little off the timeout, a WHERE, or event time are
// not.
func TestSessionTimeoutLostRows(t *testing.T) {
	funcs := function.Builtins()
	load := func(t *testing.T, name string) *conformance.Case {
		t.Helper()
		c, err := conformance.Load(filepath.Join("..", "testdata", "differential", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Run("recorded", func(t *testing.T) {
		c := load(t, sessionLostEntry)
		steps, empty := ekuiperLostSessionRows(c, nil)
		if fmt.Sprint(steps) != "[1 6 13]" || empty != 1 {
			t.Fatalf("lost steps %v (%d empty), want [1 6 13] (1 empty)", steps, empty)
		}
		o := Check(c, funcs)
		if o.Kind != Differs {
			t.Fatalf("kind %v, want a difference", o.Kind)
		}
		if got := Classify(o, false, funcs); got != "session-timeout-lost-row" {
			t.Errorf("class %q, want session-timeout-lost-row", got)
		}
		// Without its empty window eKuiper's output is not explained.
		var trimmed [][]map[string]any
		for _, em := range c.Expected {
			if em[0]["c"] != nil {
				trimmed = append(trimmed, em)
			}
		}
		o.Case.Expected = trimmed
		if got := Classify(o, false, funcs); strings.HasPrefix(got, "session-timeout-lost-row") {
			t.Errorf("class %q without the empty window, want none of session-timeout-lost-row", got)
		}
	})
	t.Run("a millisecond off the timeout", func(t *testing.T) {
		c := load(t, sessionLostEntry)
		for i := range c.Timeline {
			if i > 0 && c.Timeline[i].At-c.Timeline[i-1].At == 1000 {
				c.Timeline[i].At++
			}
		}
		if steps, _ := ekuiperLostSessionRows(c, nil); len(steps) != 0 {
			t.Errorf("lost steps %v, want none", steps)
		}
	})
	t.Run("where or event time", func(t *testing.T) {
		c := load(t, sessionLostEntry)
		c.Rule.SQL = strings.Replace(c.Rule.SQL, " GROUP BY ", " WHERE v > 0 GROUP BY ", 1)
		if steps, _ := ekuiperLostSessionRows(c, nil); len(steps) != 0 {
			t.Errorf("with a WHERE: lost steps %v, want none", steps)
		}
		c = load(t, sessionLostEntry)
		c.Clock = "event"
		o := Check(c, funcs)
		if got, ok := withoutLostSessionRows(o, funcs); ok {
			t.Errorf("event time explained as %q", got)
		}
	})
	t.Run("where", func(t *testing.T) {
		c := load(t, "diff_window/p_session_timeout_lost_where")
		o := Check(c, funcs)
		if o.Kind != Differs {
			t.Fatalf("kind %v, want a difference", o.Kind)
		}
		if got := Classify(o, false, funcs); got != "session-timeout-lost-row" {
			t.Errorf("class %q, want session-timeout-lost-row", got)
		}
		// A WHERE that lets every row through: the lost row is another.
		c = load(t, "diff_window/p_session_timeout_lost_where")
		c.Rule.SQL = strings.Replace(c.Rule.SQL, "WHERE v > 2", "WHERE v > -100 OR v IS NULL OR v <= -100", 1)
		o = Check(c, funcs)
		if got, ok := withoutLostSessionRows(o, funcs); ok {
			t.Errorf("another WHERE explained as %q", got)
		}
	})
	// Cases both engines agree on lose no row.
	for _, name := range []string{"diff_window/p_session", "diff_window/p_session7", "diff_window/p_session_cuts"} {
		t.Run(name, func(t *testing.T) {
			if steps, _ := ekuiperLostSessionRows(load(t, name), nil); len(steps) != 0 {
				t.Errorf("lost steps %v, want none", steps)
			}
		})
	}
}
