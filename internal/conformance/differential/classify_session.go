package differential

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/rekuiper/rekuiper/internal/conformance"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/operator"
)

// sessionLostEntry documents the row eKuiper loses when it reaches a
// processing-time session window exactly the timeout after the row before.
const sessionLostEntry = "diff_window/p_session_timeout_lost"

var sessionArgs = regexp.MustCompile(`(?i)SESSIONWINDOW\(\s*(dd|hh|mi|ss|ms)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)`)

// withoutLostSessionRows explains a difference of a processing-time
// session window by the rows eKuiper loses: a row that comes exactly the
// timeout after the row before it (itself not lost) meets the session's
// timeout; eKuiper closes the session with the rows before it and drops
// the row (docs/compatibility.md, sessionLostEntry). When a tick of the
// maximum duration had already emptied the session, eKuiper emits an
// empty window for it. The case is replayed without the lost rows, and
// eKuiper's output, less that many empty-window emissions, must then be
// rekuiper's, up to the value quirks, whose names it returns.
//
// Only rules whose rows reach the window when they pass the WHERE qualify:
// one stream, no strict validation.
func withoutLostSessionRows(o Outcome, funcs *function.Registry) (string, bool) {
	if funcs == nil || o.Kind != Differs || o.Case.Clock != "processing" {
		return "", false
	}
	filtered, ok := filteredRows(o.Case, funcs)
	if !ok {
		return "", false
	}
	lostSteps, empty := ekuiperLostSessionRows(o.Case, filtered)
	if len(lostSteps) == 0 {
		return "", false
	}
	drop := map[int]fate{}
	for _, i := range lostSteps {
		drop[i] = lost
	}
	c := withoutRows(o.Case, drop)
	actual, err := conformance.Replay(c, c.Rule.Options, funcs)
	if err != nil {
		return "", false
	}
	got := conformance.AsExpected(actual)
	var used string
	ok = withoutEmptyWindows(o, o.Case.Expected, empty, func(want [][]map[string]any) bool {
		if m, _ := conformance.Compare(want, actual); m == nil {
			used = "session-timeout-lost-row"
			return true
		}
		if u, ok := explainValues(o, want, got); ok {
			used = "session-timeout-lost-row+" + u
			return true
		}
		return false
	})
	return used, ok
}

// withoutEmptyWindows calls try with want less n of its empty-window
// emissions, every choice of them in turn, until try accepts one.
func withoutEmptyWindows(o Outcome, want [][]map[string]any, n int, try func([][]map[string]any) bool) bool {
	if n == 0 {
		return try(want)
	}
	for i, em := range want {
		if !emptyWindowRows(o, em) {
			continue
		}
		rest := append(append([][]map[string]any(nil), want[:i]...), want[i+1:]...)
		if withoutEmptyWindows(o, rest, n-1, try) {
			return true
		}
	}
	return false
}

// ekuiperLostSessionRows follows eKuiper's processing-time session window
// over the case's timeline: the ticks of the maximum duration (aligned
// after the rule's start; a tick empties the session when its first row
// is at least one duration old), the timeout after each row (it empties
// the session) and the rows that meet the timeout. It returns the timeline
// steps of the lost rows and how many of them met an empty session (each
// an empty window in eKuiper). The steps in filtered (rows the WHERE
// leaves out) never reach the window; a rule with a WHERE needs them
// (filteredRows). It returns nothing for a case whose rows might not all
// reach the window.
func ekuiperLostSessionRows(c *conformance.Case, filtered map[int]bool) (steps []int, empty int) {
	m := sessionArgs.FindStringSubmatch(c.Rule.SQL)
	upper := strings.ToUpper(c.Rule.SQL)
	if m == nil || len(c.StreamNames) != 1 || strings.Contains(upper, " JOIN ") ||
		strings.Contains(upper, " WHERE ") && filtered == nil {
		return nil, 0
	}
	for _, ddl := range c.Streams {
		if strings.Contains(ddl, `STRICT_VALIDATION="true"`) {
			return nil, 0
		}
	}
	unit := unitMS[strings.ToLower(m[1])]
	size, _ := strconv.ParseInt(m[2], 10, 64)
	timeout, _ := strconv.ParseInt(m[3], 10, 64)
	size, timeout = size*unit, timeout*unit
	if size <= 0 || timeout <= 0 {
		return nil, 0
	}
	tick := operator.AlignedEnd(c.StartTime, size, unit)
	var buf []int64 // arrival times of the session's rows
	last, armed, lastLost := int64(0), false, false
	for i, st := range c.Timeline {
		if filtered[i] {
			continue
		}
		at := st.At
		for {
			if armed && last+timeout < at && last+timeout < tick {
				armed = false
				buf = nil
				continue
			}
			if tick <= at {
				if len(buf) > 0 && tick-buf[0] >= size {
					buf = nil
				}
				tick += size
				continue
			}
			break
		}
		if armed && last+timeout == at && !lastLost {
			steps = append(steps, i)
			if len(buf) == 0 {
				empty++
			}
			buf, last, lastLost = nil, at, true
			continue
		}
		buf = append(buf, at)
		last, armed, lastLost = at, true, false
	}
	return steps, empty
}

// filteredRows finds the timeline steps of c whose rows its WHERE leaves
// out (false, null or an error), by replaying the condition as the only
// field over a count window of one row in processing time, one emission a
// row. A rule without a WHERE filters nothing (an empty map); ok is false
// when the condition's output is not one emission a row.
func filteredRows(c *conformance.Case, funcs *function.Registry) (map[int]bool, bool) {
	m := whereClause.FindStringSubmatch(c.Rule.SQL)
	if m == nil {
		return map[int]bool{}, true
	}
	p := cloneCase(c)
	p.Rule.SQL = "SELECT (" + m[2] + ") AS zz_where FROM " + m[1] + " GROUP BY COUNTWINDOW(1)"
	out, ok := replayPerRow(p, c, funcs)
	if !ok {
		return nil, false
	}
	filtered := map[int]bool{}
	for i, em := range out {
		if len(em) != 1 || em[0]["zz_where"] != true {
			filtered[i] = true
		}
	}
	return filtered, true
}

// whereClause finds the stream and the condition of a rule's WHERE.
var whereClause = regexp.MustCompile(`(?is)\bFROM\s+(\w+)\s+WHERE\s+(.*?)\s+(?:GROUP\s+BY|ORDER\s+BY|HAVING|LIMIT)\b`)
