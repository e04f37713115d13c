package differential

import (
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/conformance"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/operator"
)

// hopLostEntry documents the rows eKuiper loses in an event-time hopping
// window.
const hopLostEntry = "diff_eventtime/hop_ms"

var (
	hoppingArgs = regexp.MustCompile(`(?i)HOPPINGWINDOW\(\s*(dd|hh|mi|ss|ms)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)`)
	ddlTSField  = regexp.MustCompile(`(?i)TIMESTAMP\s*=\s*"(\w+)"`)
	unitMS      = map[string]int64{"dd": 86400000, "hh": 3600000, "mi": 60000, "ss": 1000, "ms": 1}
)

// withoutLostHoppingRows explains a difference of an event-time hopping
// window by the rows eKuiper loses: when a window holds no row, eKuiper
// empties its whole buffer, dropping the rows the watermark already
// released for later windows (docs/compatibility.md, hopLostEntry). It
// replays the case without those rows (and without the rows eKuiper drops
// as late, which change nothing) and reports whether rekuiper then gives
// eKuiper's output, up to the value quirks, whose names it returns.
//
// A lost row still moved eKuiper's watermark on, closing windows. Two
// replays keep that apart from its data. Marked: the row stays, marked,
// and a WHERE leaves it out after the window (where an event-time rule's
// WHERE runs); a rule that had no WHERE then loses its empty windows, so
// eKuiper's empty-window rows are left out of the comparison. Removed: the
// row goes, and the windows only its arrival closed are missing, which
// must be empty windows in eKuiper.
//
// On a strictly validated stream the rows eKuiper refuses (an error in
// its preprocessor) never reach the window or move the watermark; the
// case is read as eKuiper reads it (BIGINT fractions cut off:
// "bigint-fraction") and rekuiper's own validation finds those rows.
func withoutLostHoppingRows(o Outcome, funcs *function.Registry) (string, bool) {
	if funcs == nil || o.Kind != Differs || o.Case.Clock != "event" {
		return "", false
	}
	if used, ok := withoutLostHoppingRowsOf(o, o.Case, nil, funcs); ok || !strictStream(o.Case) {
		return used, ok
	}
	orig, prefix := o.Case, ""
	if t, changed := asEKuiperReads(orig, true, false); changed {
		orig, prefix = t, "bigint-fraction+"
	}
	refused, ok := refusedRows(orig, funcs)
	if !ok {
		return "", false
	}
	used, ok := withoutLostHoppingRowsOf(o, orig, refused, funcs)
	if !ok {
		return "", false
	}
	return prefix + used, true
}

// withoutLostHoppingRowsOf is withoutLostHoppingRows for the case orig
// (o's, or o's as eKuiper reads it) whose refused timeline steps never
// reach the window.
func withoutLostHoppingRowsOf(o Outcome, orig *conformance.Case, refused map[int]bool, funcs *function.Registry) (string, bool) {
	drop := ekuiperLostHoppingRowsRefusing(orig, refused)
	if len(drop) == 0 {
		return "", false
	}
	if c, addedWhere, ok := markedLostRows(orig, drop, refused != nil); ok {
		want := c.Expected
		if addedWhere {
			want = nil
			for _, em := range c.Expected {
				if !emptyWindowRows(o, em) {
					want = append(want, em)
				}
			}
		}
		if used, ok := replayExplains(o, c, funcs, want); ok {
			return used, true
		}
	}
	c := withoutRows(orig, drop)
	for k := len(c.Expected); k >= 0; k-- {
		if k < len(c.Expected) && !emptyWindowRows(o, c.Expected[k]) {
			break
		}
		if used, ok := replayExplains(o, c, funcs, c.Expected[:k]); ok {
			return used, true
		}
	}
	return "", false
}

// replayExplains replays c through rekuiper and reports whether its output
// is want, up to the value quirks.
func replayExplains(o Outcome, c *conformance.Case, funcs *function.Registry, want [][]map[string]any) (string, bool) {
	actual, err := conformance.Replay(c, c.Rule.Options, funcs)
	if err != nil {
		return "", false
	}
	if m, _ := conformance.Compare(want, actual); m == nil {
		return "hopping-lost-rows", true
	}
	if used, ok := explainValues(o, want, conformance.AsExpected(actual)); ok {
		return "hopping-lost-rows+" + used, true
	}
	return "", false
}

// emptyWindowRows reports whether an emission is the row of a window
// without rows: every value null but the window's bounds.
func emptyWindowRows(o Outcome, em []map[string]any) bool {
	if len(em) != 1 {
		return false
	}
	aliases := selectAliases(o.Case.Rule.SQL)
	for col, v := range em[0] {
		if e := aliases[col]; v != nil && e != "window_start()" && e != "window_end()" {
			return false
		}
	}
	return true
}

// fate is what becomes of a row eKuiper does not count.
type fate int

const (
	late fate = iota + 1 // dropped as late by the watermark
	lost                 // released, then dropped with an empty window
)

// lostMark is the field that marks, in the replayed case, a row eKuiper
// loses.
const lostMark = "zz_lost_by_ekuiper"

// markedLostRows is c with the rows eKuiper loses marked and left out by
// the rule's WHERE (added when the rule has none: addedWhere), and its
// late rows removed. ok is false for a join (whose WHERE runs after the
// join) and, unless strictOK, a strictly validated stream. On a strictly
// validated stream, which would refuse a row without the mark, every row
// is marked, false when it is kept.
func markedLostRows(orig *conformance.Case, drop map[int]fate, strictOK bool) (c *conformance.Case, addedWhere, ok bool) {
	sql := orig.Rule.SQL
	upper := strings.ToUpper(sql)
	g := strings.Index(upper, " GROUP BY ")
	if strings.Contains(upper, " JOIN ") || g < 0 {
		return nil, false, false
	}
	c = cloneCase(orig)
	c.Expected = orig.Expected
	c.Streams = append([]string(nil), orig.Streams...)
	strict := strictStream(orig)
	if strict && !strictOK {
		return nil, false, false
	}
	for i, ddl := range c.Streams {
		if open, end := strings.Index(ddl, "("), strings.Index(ddl, ") WITH ("); open >= 0 && end > open+1 {
			c.Streams[i] = ddl[:end] + ", " + lostMark + " BOOLEAN" + ddl[end:]
		}
	}
	kept := "isnull(" + lostMark + ")"
	if strict {
		kept = lostMark + " = false"
	}
	if w := strings.Index(upper, " WHERE "); w >= 0 && w < g {
		c.Rule.SQL = sql[:w] + " WHERE (" + sql[w+len(" WHERE "):g] + ") AND " + kept + sql[g:]
	} else {
		c.Rule.SQL = sql[:g] + " WHERE " + kept + sql[g:]
		addedWhere = true
	}
	for i := len(c.Timeline) - 1; i >= 0; i-- {
		st := c.Timeline[i]
		if strict && drop[i] == 0 {
			ev := &c.Inputs[st.Stream][st.Index]
			data := map[string]any{lostMark: false}
			for k, v := range ev.Data {
				data[k] = v
			}
			ev.Data = data
		}
		switch drop[i] {
		case lost:
			ev := &c.Inputs[st.Stream][st.Index]
			data := map[string]any{lostMark: true}
			for k, v := range ev.Data {
				data[k] = v
			}
			ev.Data = data
		case late:
			d := withoutStep(c, i)
			d.Expected = c.Expected
			c = d
		}
	}
	return c, addedWhere, true
}

// withoutRows is c without the rows eKuiper loses or drops as late.
func withoutRows(orig *conformance.Case, drop map[int]fate) *conformance.Case {
	c := cloneCase(orig)
	c.Expected = orig.Expected
	for i := len(c.Timeline) - 1; i >= 0; i-- {
		if drop[i] != 0 {
			d := withoutStep(c, i)
			d.Expected = c.Expected
			c = d
		}
	}
	return c
}

// ekuiperLostHoppingRows follows eKuiper's event-time hopping window over
// the case's timeline: its watermark (the smallest of the streams' largest
// timestamps, less the late tolerance; a row older than the last watermark
// is dropped as late), the first window's end (aligned after the earliest
// released row), and the buffer of released rows that each window end
// trims. It returns the timeline steps of the rows eKuiper loses, with
// those of its late rows, when it loses any; nil otherwise. The rule's
// WHERE does not matter: in event time it runs after the window.
func ekuiperLostHoppingRows(c *conformance.Case) map[int]fate {
	return ekuiperLostHoppingRowsRefusing(c, nil)
}

// ekuiperLostHoppingRowsRefusing is ekuiperLostHoppingRows for a case
// whose refused timeline steps never reach the window.
func ekuiperLostHoppingRowsRefusing(c *conformance.Case, refused map[int]bool) map[int]fate {
	h, ok := readHopping(c)
	if !ok {
		return nil
	}
	size, hop, unit, tol, field := h.size, h.hop, h.unit, h.tol, h.tsField
	type held struct {
		ts   int64
		step int
	}
	const none = int64(-1 << 63)
	maxTS := map[string]int64{}
	wm, end := none, none
	var pending, buffer []held
	out := map[int]fate{}
	anyLost := false
	for i, st := range c.Timeline {
		f, ok := field[st.Stream]
		if !ok || st.Index >= len(c.Inputs[st.Stream]) || refused[i] {
			continue
		}
		ts, ok := intValue(c.Inputs[st.Stream][st.Index].Data[f])
		if !ok {
			return nil
		}
		if prev, seen := maxTS[st.Stream]; !seen || ts > prev {
			maxTS[st.Stream] = ts
		}
		if ts < wm {
			out[i] = late
			continue
		}
		pending = append(pending, held{ts, i})
		next, all := int64(1<<62), true
		for s := range field {
			v, seen := maxTS[s]
			if !seen {
				all = false
				break
			}
			next = min(next, v)
		}
		if !all || next-tol <= wm {
			continue
		}
		wm = next - tol
		sort.SliceStable(pending, func(a, b int) bool { return pending[a].ts < pending[b].ts })
		n := 0
		for n < len(pending) && pending[n].ts <= wm {
			n++
		}
		buffer = append(buffer, pending[:n]...)
		pending = append([]held(nil), pending[n:]...)
		if end == none && len(buffer) > 0 {
			end = operator.AlignedEnd(buffer[0].ts, hop, unit)
		}
		for end != none && end <= wm {
			k := 0
			for k < len(buffer) && buffer[k].ts < end-size {
				k++
			}
			if k < len(buffer) && buffer[k].ts < end {
				buffer = buffer[k:]
			} else {
				for _, h := range buffer[k:] {
					out[h.step], anyLost = lost, true
				}
				buffer = nil
			}
			end += hop
		}
	}
	if !anyLost {
		return nil
	}
	return out
}

// hopping is what ekuiperLostHoppingRows needs of a case: the window
// (ms), the late tolerance (ms) and each stream's timestamp field.
type hopping struct {
	size, hop, unit, tol int64
	tsField              map[string]string
}

// readHopping reads the hopping window, late tolerance and timestamp
// fields of c; ok is false when c has no event-time hopping window.
func readHopping(c *conformance.Case) (h hopping, ok bool) {
	m := hoppingArgs.FindStringSubmatch(c.Rule.SQL)
	if m == nil {
		return h, false
	}
	h.unit = unitMS[strings.ToLower(m[1])]
	h.size, _ = strconv.ParseInt(m[2], 10, 64)
	h.hop, _ = strconv.ParseInt(m[3], 10, 64)
	h.size, h.hop = h.size*h.unit, h.hop*h.unit
	if h.size <= 0 || h.hop <= 0 {
		return h, false
	}
	if s, ok := c.Rule.Options["lateTolerance"].(string); ok && s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return h, false
		}
		h.tol = d.Milliseconds()
	}
	h.tsField = map[string]string{}
	for i, ddl := range c.Streams {
		if i >= len(c.StreamNames) || strings.Contains(strings.ToUpper(ddl), "CREATE TABLE") {
			continue
		}
		if f := ddlTSField.FindStringSubmatch(ddl); f != nil {
			h.tsField[c.StreamNames[i]] = f[1]
		}
	}
	return h, len(h.tsField) > 0
}

func intValue(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64:
		return int64(x), x == float64(int64(x))
	case json.Number:
		i, err := x.Int64()
		return i, err == nil
	}
	return 0, false
}

// strictStream reports whether a stream of c is strictly validated.
func strictStream(c *conformance.Case) bool {
	for _, ddl := range c.Streams {
		if strings.Contains(ddl, `STRICT_VALIDATION="true"`) {
			return true
		}
	}
	return false
}

// refusedRows finds the timeline steps of c whose rows rekuiper's
// validation refuses, by replaying c's rule (its fields and WHERE as
// fields, so that the same columns are checked) over a count window of
// one row in processing time: every row then gives one emission, an
// error from the preprocessor for a refused row. ok is false for a rule
// that does not fit (one FROM stream, GROUP BY) or an output that is not
// one emission a row.
func refusedRows(c *conformance.Case, funcs *function.Registry) (map[int]bool, bool) {
	sql := c.Rule.SQL
	upper := strings.ToUpper(sql)
	f, g := strings.Index(upper, " FROM "), strings.Index(upper, " GROUP BY ")
	if f < 0 || g < f || strings.Contains(upper, " JOIN ") || len(c.StreamNames) != 1 {
		return nil, false
	}
	from, fields := sql[f+len(" FROM "):g], sql[:f]
	if w := strings.Index(strings.ToUpper(from), " WHERE "); w >= 0 {
		fields += ", (" + from[w+len(" WHERE "):] + ") AS zz_where"
		from = from[:w]
	}
	p := cloneCase(c)
	p.Rule.SQL = fields + " FROM " + from + " GROUP BY COUNTWINDOW(1)"
	out, ok := replayPerRow(p, c, funcs)
	if !ok {
		return nil, false
	}
	refused := map[int]bool{}
	for i, em := range out {
		if len(em) == 1 {
			if e, ok := em[0]["error"].(string); ok && strings.HasPrefix(e, "error in preprocessor") {
				refused[i] = true
			}
		}
	}
	return refused, true
}

// replayPerRow replays p, a rewrite of c over COUNTWINDOW(1), in
// processing time with errors sent, and returns its emissions: one a
// timeline step of c, or ok false.
func replayPerRow(p, c *conformance.Case, funcs *function.Registry) ([][]map[string]any, bool) {
	p.Clock = "processing"
	opts := map[string]any{}
	for k, v := range c.Rule.Options {
		opts[k] = v
	}
	opts["isEventTime"], opts["sendError"] = false, true
	delete(opts, "lateTolerance")
	p.Rule.Options = opts
	actual, err := conformance.Replay(p, opts, funcs)
	if err != nil {
		return nil, false
	}
	out := conformance.AsExpected(actual)
	if len(out) != len(c.Timeline) {
		return nil, false
	}
	return out, true
}
