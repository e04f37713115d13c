package differential

import (
	"regexp"
	"sort"
	"strings"

	"github.com/rekuiper/rekuiper/internal/conformance"
)

// valueQuirk accounts for a value pair of one output column: eKuiper's
// value want, rekuiper's got (nil when a key is missing). applies builds,
// for one case, the predicate for a column; nil means the quirk cannot
// apply to the case.
type valueQuirk struct {
	name, entry string
	applies     func(o Outcome) func(col string, want, got any) bool
}

const (
	bigintEntry    = "gen_schema/strict_int_from_float"
	nullArrayEntry = "diff_schema/strict_null_array"
	// eKuiper fails on a row (a quirk that is an error in eKuiper) and,
	// not sending errors, emits nothing for it.
	droppedEntry = "rand_window/s1_96"
	// Event-time windows closed by the last record's watermark, which
	// eKuiper's harness does not apply before the input ends.
	eventTimeEndEntry = "event-time end of input"
	// Groups of a window without ORDER BY: eKuiper's order is its map's.
	groupOrderEntry = "rand_window/s1_38"
)

var valueQuirks = []valueQuirk{
	{"acc-functions", "gen_analytic/acc_int_values", func(o Outcome) func(string, any, any) bool {
		// 0 before any accepted value in eKuiper, nil in rekuiper.
		acc := derivedFrom(o, "acc_")
		return func(col string, _, _ any) bool { return acc[col] }
	}},
	{"avg-integer", "gen_agg/avg_int_truncation", func(o Outcome) func(string, any, any) bool {
		// eKuiper's average of integers is an integer (computed over the
		// values cut to integers when floats follow an integer).
		avg := derivedFrom(o, "avg(")
		return func(col string, want, got any) bool {
			_, wok := want.(int64)
			_, gok := got.(float64)
			return avg[col] && wok && gok
		}
	}},
	{"aggregate-first-type", "diff_window/median_first_int", func(o Outcome) func(string, any, any) bool {
		// eKuiper converts the values of median, sum, min and max to the
		// type of the first one.
		agg := derivedFrom(o, "median(", "sum(", "min(", "max(")
		return func(col string, want, got any) bool { return agg[col] && isNumber(want) && isNumber(got) }
	}},
	{"nan-infinity", "diff_funcs/power_neg", func(Outcome) func(string, any, any) bool {
		return func(_ string, want, got any) bool { return isNaNOrInf(want) && got == nil }
	}},
	{"hopping-window-start", "diff_window/hopping_start", func(o Outcome) func(string, any, any) bool {
		if !sqlHas(o, "HOPPINGWINDOW") {
			return nil
		}
		aliases := selectAliases(o.Case.Rule.SQL)
		return func(col string, want, got any) bool {
			return aliases[col] == "window_start()" && isInt(want) && isInt(got)
		}
	}},
	{"go-syntax", "gen_func_conv/cast_string", func(o Outcome) func(string, any, any) bool {
		// Arrays and objects read as text (hashed, trimmed, reversed,
		// measured): Go syntax in eKuiper, JSON in rekuiper.
		aliases := selectAliases(o.Case.Rule.SQL)
		return func(col string, want, got any) bool {
			w, wok := want.(string)
			_, gok := got.(string)
			if wok && gok && strings.Contains(strings.ToLower(w), "map[") {
				return true
			}
			if _, wb := want.(bool); wb && hasFuncPrefix(aliases[col], "regexp_matches(", "startswith(", "endswith(") {
				// The text matched is Go syntax in eKuiper.
				_, gb := got.(bool)
				return gb && compositeArg(aliases[col])
			}
			return compositeArg(aliases[col]) && (gok || isInt(got)) && (wok || isInt(want))
		}
	}},
	{"crc32-padding", "gen_func_hash/crc32", func(o Outcome) func(string, any, any) bool {
		aliases := selectAliases(o.Case.Rule.SQL)
		return func(col string, want, got any) bool {
			w, _ := want.(string)
			g, _ := got.(string)
			return strings.HasPrefix(aliases[col], "crc32(") && len(g) == 8 && strings.TrimLeft(g, "0") == strings.TrimLeft(w, "0")
		}
	}},
	{"dec2hex-sign", "gen_func_conv/dec2hex_forms", func(o Outcome) func(string, any, any) bool {
		aliases := selectAliases(o.Case.Rule.SQL)
		return func(col string, want, got any) bool {
			w, _ := want.(string)
			return strings.HasPrefix(aliases[col], "dec2hex(") && strings.HasPrefix(w, "0x-")
		}
	}},
	{"format-grouping", "gen_func_string/format_nil_and_int", func(o Outcome) func(string, any, any) bool {
		// eKuiper's format() leaves out the thousands separators.
		aliases := selectAliases(o.Case.Rule.SQL)
		return func(col string, want, got any) bool {
			w, wok := want.(string)
			g, gok := got.(string)
			return strings.HasPrefix(aliases[col], "format(") && wok && gok && strings.ReplaceAll(g, ",", "") == w
		}
	}},
	{"changed-int-float", "diff_analytic/changed_int_float", func(o Outcome) func(string, any, any) bool {
		// eKuiper sees 1 followed by 1.0 as a change.
		changed := derivedFrom(o, "changed_col(", "had_changed(")
		prefixes := changedColsPrefix.FindAllStringSubmatch(o.Case.Rule.SQL, -1)
		return func(col string, _, _ any) bool {
			if changed[col] {
				return true
			}
			for _, p := range prefixes {
				if strings.HasPrefix(col, p[1]) {
					return true
				}
			}
			return false
		}
	}},
	{"array-extremum-mixed", "gen_func_array/array_max_mixed", func(o Outcome) func(string, any, any) bool {
		// eKuiper's array_max/array_min compare as the first element's type.
		ext := derivedFrom(o, "array_max(", "array_min(")
		return func(col string, want, got any) bool { return ext[col] }
	}},
	{"trunc-rounds", "gen_func_conv/trunc_negative", func(o Outcome) func(string, any, any) bool {
		// eKuiper's trunc rounds (through an int, which overflows for
		// large numbers of digits).
		trunc := derivedFrom(o, "trunc(")
		return func(col string, want, got any) bool { return trunc[col] && isFloat(want) && isFloat(got) }
	}},
	{"format-time-digits", "diff_funcs/format_time_digits", func(o Outcome) func(string, any, any) bool {
		// eKuiper reads the digits of a format_time pattern as Go layout
		// elements; the text around them is the same.
		aliases := selectAliases(o.Case.Rule.SQL)
		return func(col string, want, got any) bool {
			w, wok := want.(string)
			g, gok := got.(string)
			return strings.HasPrefix(aliases[col], "format_time(") && wok && gok &&
				strings.ContainsAny(g, "0123456789") && stripDigits(w) == stripDigits(g)
		}
	}},
	{"array-sort-text", "diff_funcs/array_sort_text", func(o Outcome) func(string, any, any) bool {
		// eKuiper's array_sort orders the elements by their text.
		sorted := derivedFrom(o, "array_sort(")
		return func(col string, want, got any) bool { return sorted[col] && samePermutation(want, got) }
	}},
	{"items-map-order", "diff_funcs/items_order", itemsMapOrder},
	{"from-days-overflow", "diff_funcs/from_days_overflow", fromDaysOverflow},
	{"chr", "gen_func_conv/chr", func(o Outcome) func(string, any, any) bool {
		aliases := selectAliases(o.Case.Rule.SQL)
		return func(col string, _, _ any) bool { return strings.HasPrefix(aliases[col], "chr(") }
	}},
}

// rowQuirk accounts for a row that is an error row in one engine and a
// row of values in the other. applies builds, for one case, the predicate
// for a pair of rows; nil means the quirk cannot apply to the case.
type rowQuirk struct {
	name, entry string
	applies     func(o Outcome) func(want, got map[string]any) bool
}

var rowQuirks = []rowQuirk{
	{"strict-null-array", nullArrayEntry, func(o Outcome) func(want, got map[string]any) bool {
		// eKuiper's null ARRAY or STRUCT column of a strictly validated
		// stream is a value (a typed nil slice or map): an expression that
		// passes it on (an alias, bypass, coalesce, CASE) writes a null
		// where rekuiper leaves the field out, coalesce() stops at it and
		// array_create() keeps it as an element.
		cols := append(strictColumns(o.Case, ddlAnyArr), strictColumns(o.Case, ddlStruct)...)
		if len(cols) == 0 {
			return nil
		}
		aliases := selectAliases(o.Case.Rule.SQL)
		return func(want, got map[string]any) bool {
			if _, we := want["error"]; we {
				return false
			}
			if _, ge := got["error"]; ge {
				return false
			}
			differs := false
			for k, w := range want {
				g, gok := got[k]
				if gok && conformance.RowEqual(map[string]any{k: w}, map[string]any{k: g}) {
					continue
				}
				if !readsAny(aliases[k], cols) {
					return false
				}
				if w != nil && !(hasFuncPrefix(aliases[k], "array_create(") && gok && nullsKept(w, g)) {
					return false
				}
				differs = true
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					return false
				}
			}
			return differs
		}
	}},
	{"hopping-empty-window", "diff_eventtime/hop_ms", func(o Outcome) func(want, got map[string]any) bool {
		// eKuiper reports later windows of an event-time hopping window
		// empty although rows fall in them.
		if o.Case.Clock != "event" || !sqlHas(o, "HOPPINGWINDOW") {
			return nil
		}
		return func(want, got map[string]any) bool {
			if _, ge := got["error"]; ge {
				return false
			}
			for _, v := range want {
				if v != nil {
					return false
				}
			}
			for _, v := range got {
				if v != nil {
					return true
				}
			}
			return false
		}
	}},
	{"go-syntax-pattern", "gen_func_conv/cast_string", func(o Outcome) func(want, got map[string]any) bool {
		// An array or object as a regular expression is Go syntax in
		// eKuiper ([""] is "[]", which does not compile), JSON in
		// rekuiper.
		aliases := selectAliases(o.Case.Rule.SQL)
		return func(want, got map[string]any) bool {
			e, _ := want["error"].(string)
			m := ekuiperAliasError.FindStringSubmatch(e)
			if _, ge := got["error"]; ge || m == nil || !strings.Contains(e, "error parsing regexp") {
				return false
			}
			call := aliases[m[1]]
			return hasFuncPrefix(call, "regexp_") && compositeArg(call)
		}
	}},
	{"trunc-float-digits", "diff_funcs/trunc_float_digits", func(o Outcome) func(want, got map[string]any) bool {
		// eKuiper's trunc refuses a number of digits given as a float.
		if !sqlHas(o, "trunc(") {
			return nil
		}
		return func(want, got map[string]any) bool {
			e, _ := want["error"].(string)
			_, ge := got["error"]
			return !ge && strings.Contains(e, "call func trunc error: The 2nd parameter must be int value.")
		}
	}},
	{"format-not-number", "diff_funcs/format_not_number", func(o Outcome) func(want, got map[string]any) bool {
		// eKuiper's format() reads a value that is not a number as 0.
		aliases := selectAliases(o.Case.Rule.SQL)
		return func(want, got map[string]any) bool {
			e, _ := got["error"].(string)
			m := formatConvError.FindStringSubmatch(e)
			if m == nil {
				return false
			}
			w, _ := want[m[1]].(string)
			return strings.HasPrefix(aliases[m[1]], "format(") && w != "" && strings.Trim(w, "0.") == ""
		}
	}},
}

// ekuiperAliasError names the field of eKuiper's error for an expression.
var ekuiperAliasError = regexp.MustCompile(`alias: (\w+) expr: `)

// formatConvError is rekuiper's error for a value format() cannot read
// as a number.
var formatConvError = regexp.MustCompile(`alias: (\w+) expr: cannot convert .* to float64$`)

// samePermutation reports whether want and got are arrays holding the
// same elements in some order.
func samePermutation(want, got any) bool {
	w, wok := want.([]any)
	g, gok := got.([]any)
	if !wok || !gok || len(w) != len(g) {
		return false
	}
	taken := make([]bool, len(g))
	for _, e := range w {
		found := false
		for j, a := range g {
			if !taken[j] && conformance.RowEqual(map[string]any{"e": e}, map[string]any{"e": a}) {
				taken[j], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func stripDigits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, s)
}

var changedColsPrefix = regexp.MustCompile(`(?i)changed_cols\("([^"]*)"`)

// explainValues matches eKuiper's emissions (want) with rekuiper's (got),
// accepting the value pairs of valueQuirks, the rows of a group in another
// order when the query groups without ORDER BY (eKuiper's order is its
// map's), and emissions eKuiper dropped when a quirk made it fail on a row
// it does not send. It returns the names of the quirks used.
func explainValues(o Outcome, want, got [][]map[string]any) (string, bool) {
	if o.Kind != Differs {
		return "", false
	}
	m := &valueMatcher{used: map[string]bool{}, unordered: sqlHas(o, "GROUP BY") && !sqlHas(o, "ORDER BY")}
	for _, q := range valueQuirks {
		if f := q.applies(o); f != nil {
			m.quirks = append(m.quirks, namedQuirk{q.name, f})
		}
	}
	for _, q := range rowQuirks {
		if f := q.applies(o); f != nil {
			m.rowQuirks = append(m.rowQuirks, namedRowQuirk{q.name, f})
		}
	}
	dropped := o.Case.Rule.Options["sendError"] == false && sqlHas(o, "acc_", "avg(", "sum(", "median(", "min(", "max(", "stddev", "var")
	j := 0
	for _, em := range want {
		for ; j < len(got); j++ {
			if m.emission(em, got[j]) {
				break
			}
			if !dropped {
				return "", false
			}
			m.used["ekuiper-dropped"] = true
		}
		if j == len(got) {
			return "", false
		}
		j++
	}
	if j < len(got) {
		switch {
		case o.Case.Clock == "event":
			// eKuiper's harness stops the rule when its sources end,
			// before the watermark of the last record closes windows.
			m.used["eventtime-end"] = true
		case dropped:
			m.used["ekuiper-dropped"] = true
		default:
			return "", false
		}
	}
	if m.reordered {
		m.used["group-order"] = true
	}
	if len(m.used) == 0 {
		return "", false
	}
	names := make([]string, 0, len(m.used))
	for n := range m.used {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, "+"), true
}

func hasNaNOrInf(row map[string]any) bool {
	for _, v := range row {
		if isNaNOrInf(v) {
			return true
		}
	}
	return false
}

type namedQuirk struct {
	name string
	f    func(col string, want, got any) bool
}

type namedRowQuirk struct {
	name string
	f    func(want, got map[string]any) bool
}

type valueMatcher struct {
	quirks    []namedQuirk
	rowQuirks []namedRowQuirk
	unordered bool
	reordered bool
	used      map[string]bool
}

func (m *valueMatcher) emission(want, got []map[string]any) bool {
	if len(want) != len(got) {
		return false
	}
	ordered := true
	for i := range want {
		if !m.row(want[i], got[i], false) {
			ordered = false
			break
		}
	}
	if ordered {
		for i := range want {
			m.row(want[i], got[i], true)
		}
		return true
	}
	if !m.unordered {
		return false
	}
	// Pair every row of want with one of got (a bipartite matching by
	// augmenting paths): a row a quirk accepts in another's place, such as
	// an empty window row, must not take the row that equals another.
	// cand lists, for each row of want, the rows of got it may pair
	// with, those equal to it first.
	cand := make([][]int, len(want))
	for i, w := range want {
		var quirky []int
		for j, g := range got {
			switch {
			case conformance.RowEqual(w, g):
				cand[i] = append(cand[i], j)
			case m.row(w, g, false):
				quirky = append(quirky, j)
			}
		}
		cand[i] = append(cand[i], quirky...)
	}
	owner := make([]int, len(got))
	for j := range owner {
		owner[j] = -1
	}
	var augment func(i int, seen []bool) bool
	augment = func(i int, seen []bool) bool {
		for _, j := range cand[i] {
			if !seen[j] {
				seen[j] = true
				if owner[j] < 0 || augment(owner[j], seen) {
					owner[j] = i
					return true
				}
			}
		}
		return false
	}
	for i := range want {
		if !augment(i, make([]bool, len(got))) {
			return false
		}
	}
	for j, i := range owner {
		m.row(want[i], got[j], true)
	}
	m.reordered = true
	return true
}

// row compares two rows key by key, and failing that tries the row
// quirks. With record set it notes the quirks that accounted for it.
func (m *valueMatcher) row(want, got map[string]any, record bool) bool {
	if m.values(want, got, false) {
		return m.values(want, got, record)
	}
	for _, q := range m.rowQuirks {
		if q.f(want, got) {
			if record {
				m.used[q.name] = true
			}
			return true
		}
	}
	return false
}

// values compares two rows key by key; error rows equal error rows.
func (m *valueMatcher) values(want, got map[string]any, record bool) bool {
	_, we := want["error"]
	_, ge := got["error"]
	if ge && !we && len(got) == 1 && hasNaNOrInf(want) {
		// eKuiper computes NaN or an infinity where rekuiper reports an
		// error (as mod() of a non-number).
		if record {
			m.used["nan-infinity"] = true
		}
		return true
	}
	if we || ge {
		return we && ge && len(want) == 1 && len(got) == 1
	}
	pair := func(k string, w any, wok bool, g any, gok bool) bool {
		if wok && gok && conformance.RowEqual(map[string]any{k: w}, map[string]any{k: g}) {
			return true
		}
		for _, q := range m.quirks {
			if q.f(k, w, g) {
				if record {
					m.used[q.name] = true
				}
				return true
			}
		}
		return false
	}
	for k, w := range want {
		g, ok := got[k]
		if !pair(k, w, true, g, ok) {
			return false
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok && !pair(k, nil, false, g, true) {
			return false
		}
	}
	return true
}

// selectAliases maps each output name of the rule's SELECT list to its
// expression (lower case), for the fields written "expr AS name".
func selectAliases(sql string) map[string]string {
	out := map[string]string{}
	for _, f := range selectFields(sql) {
		i := strings.LastIndex(strings.ToUpper(f), " AS ")
		if i < 0 {
			continue
		}
		out[strings.TrimSpace(f[i+4:])] = strings.ToLower(strings.TrimSpace(f[:i]))
	}
	return out
}

// derivedFrom returns the output names whose expression starts with one
// of the prefixes, and those whose expression uses such a name (an alias
// reused: a0 + 1).
func derivedFrom(o Outcome, prefixes ...string) map[string]bool {
	aliases := selectAliases(o.Case.Rule.SQL)
	out := map[string]bool{}
	for a, e := range aliases {
		if hasFuncPrefix(e, prefixes...) {
			out[a] = true
		}
	}
	for a, e := range aliases {
		for b := range out {
			if usesName(e, b) {
				out[a] = true
			}
		}
	}
	return out
}

// usesName reports whether expr mentions name as a whole word.
func usesName(expr, name string) bool {
	for i := 0; ; {
		j := strings.Index(expr[i:], name)
		if j < 0 {
			return false
		}
		j += i
		before := j == 0 || !isWordByte(expr[j-1])
		after := j+len(name) == len(expr) || !isWordByte(expr[j+len(name)])
		if before && after {
			return true
		}
		i = j + 1
	}
}

// strictColumns names the columns of the case's strictly validated
// streams that column (ddlAnyArr, ddlStruct) matches.
func strictColumns(c *conformance.Case, column *regexp.Regexp) []string {
	var cols []string
	for _, ddl := range c.Streams {
		if !strings.Contains(ddl, `STRICT_VALIDATION="true"`) {
			continue
		}
		for _, m := range column.FindAllStringSubmatch(ddl, -1) {
			cols = append(cols, m[1])
		}
	}
	return cols
}

// nullsKept reports whether want is the array got with null elements
// added.
func nullsKept(want, got any) bool {
	w, wok := want.([]any)
	g, gok := got.([]any)
	if !wok || !gok || len(w) <= len(g) {
		return false
	}
	var kept []any
	for _, e := range w {
		if e != nil {
			kept = append(kept, e)
		}
	}
	return conformance.RowEqual(map[string]any{"a": kept}, map[string]any{"a": g})
}

// readsAny reports whether expr mentions one of the names as a word.
func readsAny(expr string, names []string) bool {
	for _, n := range names {
		if usesName(expr, strings.ToLower(n)) {
			return true
		}
	}
	return false
}
