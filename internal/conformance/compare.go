package conformance

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/value"
)

// Mismatch describes how actual emissions differ from the expected ones.
type Mismatch struct {
	Index    int // emission index, -1 for a length difference
	Expected string
	Actual   string
	Reason   string
}

func (m *Mismatch) Error() string {
	if m.Index < 0 {
		return fmt.Sprintf("%s\n  expected: %s\n  actual:   %s", m.Reason, m.Expected, m.Actual)
	}
	return fmt.Sprintf("emission %d: %s\n  expected: %s\n  actual:   %s", m.Index, m.Reason, m.Expected, m.Actual)
}

// Compare applies FORMAT.md §4.3. Error rows match any error row; exact is
// false when an error message differs from the reference engine's.
func Compare(expected, actual [][]map[string]any) (mismatch *Mismatch, exactErrors bool) {
	exactErrors = true
	n := len(expected)
	if len(actual) > n {
		for _, em := range actual[n:] {
			if len(em) != 0 {
				return &Mismatch{Index: -1, Reason: fmt.Sprintf("%d emissions expected, %d produced", len(expected), len(actual)),
					Expected: Show(expected), Actual: Show(actual)}, exactErrors
			}
		}
	} else if len(actual) < n {
		return &Mismatch{Index: -1, Reason: fmt.Sprintf("%d emissions expected, %d produced", len(expected), len(actual)),
			Expected: Show(expected), Actual: Show(actual)}, exactErrors
	}
	for i := range expected {
		e, a := expected[i], actual[i]
		if len(e) != len(a) {
			return &Mismatch{Index: i, Reason: fmt.Sprintf("%d rows expected, %d produced", len(e), len(a)), Expected: Show(e), Actual: Show(a)}, exactErrors
		}
		for j := range e {
			if em, ok := e[j]["error"]; ok && len(e[j]) == 1 {
				am, ok := a[j]["error"]
				if !ok || len(a[j]) != 1 {
					return &Mismatch{Index: i, Reason: fmt.Sprintf("row %d: an error row expected", j), Expected: Show(e), Actual: Show(a)}, exactErrors
				}
				if em != am {
					exactErrors = false
				}
				continue
			}
			if !RowEqual(e[j], a[j]) {
				return &Mismatch{Index: i, Reason: fmt.Sprintf("row %d differs", j), Expected: Show(e), Actual: Show(a)}, exactErrors
			}
		}
	}
	return nil, exactErrors
}

// RowEqual compares two rows by key set and strict value equality (int64 and
// float64 are different types).
func RowEqual(e, a map[string]any) bool {
	if len(e) != len(a) {
		return false
	}
	for k, ev := range e {
		av, ok := a[k]
		if !ok || !strictEqual(ev, normalizeActual(av)) {
			return false
		}
	}
	return true
}

// normalizeActual maps engine values to what a JSON sink would write, so
// they compare with the decoded expectation: datetimes as their JSON
// string form in UTC (the corpus records datetimes in UTC, whatever zone
// the value carries, e.g. one parsed from "...T22:13:20+08:00").
func normalizeActual(v any) any {
	return MapLeaves(v, func(v any) any {
		if t, ok := v.(time.Time); ok {
			return t.UTC().Format(value.JSONTimeLayout)
		}
		return v
	})
}

// MapLeaves returns a copy of v with leaf applied to every value in it
// that is not a []any or a map[string]any; a nil slice or map stays nil.
func MapLeaves(v any, leaf func(any) any) any {
	switch x := v.(type) {
	case []any:
		if x == nil {
			return nil
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = MapLeaves(e, leaf)
		}
		return out
	case map[string]any:
		if x == nil {
			return nil
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = MapLeaves(e, leaf)
		}
		return out
	}
	return leaf(v)
}

func strictEqual(e, a any) bool {
	switch ev := e.(type) {
	case nil:
		if a == nil {
			return true
		}
		switch x := a.(type) {
		case []any:
			return x == nil
		case map[string]any:
			return x == nil
		}
		return false
	case int64:
		av, ok := a.(int64)
		return ok && av == ev
	case float64:
		av, ok := a.(float64)
		return ok && (av == ev || math.IsNaN(av) && math.IsNaN(ev))
	case string:
		// eKuiper's harness writes NaN and the infinities, which JSON
		// cannot hold, as these strings.
		if av, ok := a.(float64); ok {
			return ev == "NaN" && math.IsNaN(av) || ev == "+Inf" && math.IsInf(av, 1) || ev == "-Inf" && math.IsInf(av, -1)
		}
	case []byte:
		av, ok := a.([]byte)
		return ok && bytes.Equal(av, ev)
	case []any:
		av, ok := a.([]any)
		if !ok || len(av) != len(ev) || av == nil {
			return false
		}
		for i := range ev {
			if !strictEqual(ev[i], av[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		av, ok := a.(map[string]any)
		if !ok || av == nil {
			return false
		}
		return RowEqual(ev, av)
	}
	return value.Equal(e, a) && fmt.Sprintf("%T", e) == fmt.Sprintf("%T", a)
}

// Show renders values as JSON with floats always carrying a fraction, so
// int/float differences are visible in diffs, and byte arrays as the
// format's {"$bytes": "<base64>"}.
func Show(v any) string {
	var b strings.Builder
	show(&b, v)
	return b.String()
}

func show(b *strings.Builder, v any) {
	switch x := v.(type) {
	case float64:
		s := fmt.Sprintf("%v", x)
		if !strings.ContainsAny(s, ".eEIN") {
			s += ".0"
		}
		b.WriteString(s)
	case []map[string]any:
		showList(b, x)
	case [][]map[string]any:
		showList(b, x)
	case []any:
		if x == nil {
			b.WriteString("null")
			return
		}
		showList(b, x)
	case map[string]any:
		b.WriteByte('{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, "%q: ", k)
			show(b, x[k])
		}
		b.WriteByte('}')
	case []byte:
		fmt.Fprintf(b, `{"$bytes": %q}`, base64.StdEncoding.EncodeToString(x))
	case time.Time:
		fmt.Fprintf(b, "datetime(%s)", x.Format(time.RFC3339Nano))
	default:
		j, err := json.Marshal(x)
		if err != nil {
			fmt.Fprintf(b, "%v", x)
			return
		}
		b.Write(j)
	}
}

// showList writes xs as show writes a list: [a, b].
func showList[E any](b *strings.Builder, xs []E) {
	b.WriteByte('[')
	for i, e := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		show(b, e)
	}
	b.WriteByte(']')
}

// AsExpected converts engine emissions to the form decoded expectations
// have (datetimes as strings, typed nil arrays as nil), so that one run's
// output can serve as another's expectation.
func AsExpected(emissions [][]map[string]any) [][]map[string]any {
	out := make([][]map[string]any, len(emissions))
	for i, em := range emissions {
		rows := make([]map[string]any, len(em))
		for j, r := range em {
			rows[j], _ = normalizeActual(r).(map[string]any)
		}
		out[i] = rows
	}
	return out
}
