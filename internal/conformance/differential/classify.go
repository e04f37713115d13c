package differential

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/rekuiper/rekuiper/internal/conformance"
	"github.com/rekuiper/rekuiper/internal/function"
)

// Classes of a difference besides the quirk rules' names.
const (
	// Variance: eKuiper gave two different outputs for the case in two
	// runs; its answer is not a fact a case can record.
	Variance = "ekuiper-variance"
	// Unexplained: no quirk rule and no rerun explains the difference.
	Unexplained = "unexplained"
)

// quirkRule recognises differences that a documented deliberate difference
// explains. entry is a case docs/compatibility.md names in back-quotes in
// the row (or paragraph) that documents the behaviour; a test checks that
// the file still names it.
type quirkRule struct {
	name  string
	entry string
	match func(o Outcome, funcs *function.Registry) bool
}

// Classify sorts a difference: eKuiper's variance when its two runs
// differed (varied), else the first quirk rule that matches, else
// Unexplained.
// funcs replays variants of the case (see bigintTruncated).
//
// A difference of values is explained when eKuiper's emissions equal
// rekuiper's once every value pair some value quirk accounts for is
// accepted (valueQuirks); its class then names every quirk used, joined
// by "+". When that fails, the case is tried again with the inputs as
// eKuiper reads them on a typed stream (bigintTruncated).
func Classify(o Outcome, varied bool, funcs *function.Registry) string {
	if varied {
		return Variance
	}
	rules := quirkRules
	if o.Kind != Differs {
		rules = refusalRules
	}
	for _, r := range rules {
		if r.match(o, funcs) {
			return r.name
		}
	}
	if used, ok := explainValues(o, o.Case.Expected, conformance.AsExpected(o.Actual)); ok {
		return used
	}
	if names, used, ok := inputsAsEKuiperReads(o, funcs); ok {
		if used != "" {
			names = append(names, used)
		}
		return strings.Join(names, "+")
	}
	if used, ok := withoutLostHoppingRows(o, funcs); ok {
		return used
	}
	if used, ok := withoutLostSessionRows(o, funcs); ok {
		return used
	}
	return Unexplained
}

// intLiteralArg finds an array search by an integer literal.
var intLiteralArg = regexp.MustCompile(`(?i)\b(array_remove|array_position|array_last_position|array_contains)\([^()]*,\s*\(?-?[0-9]+\)?\)`)

// aggOfExpr finds an aggregate that takes errors as values in eKuiper
// (count, collect, merge_agg) over an arithmetic expression.
var aggOfExpr = regexp.MustCompile(`(?i)\b(count|collect|merge_agg)\([^()]*[-+*/%][^()]*\)`)

var (
	ddlName   = regexp.MustCompile(`(?i)^\s*CREATE\s+(?:STREAM|TABLE)\s+(\w+)`)
	ddlBigint = regexp.MustCompile(`(\w+) BIGINT\b`)
	ddlArray  = regexp.MustCompile(`(\w+) ARRAY\(BIGINT\)`)
	ddlAnyArr = regexp.MustCompile(`(\w+) ARRAY\(`)
	ddlStruct = regexp.MustCompile(`(\w+) STRUCT\(([^)]*)\)`)
)

// inputsAsEKuiperReads reports whether rekuiper gives eKuiper's output
// (up to the value quirks, whose names it returns in used) once the inputs
// are what eKuiper makes of them on a typed stream (or its output is then
// a quirk rule's): every fraction in a
// BIGINT column, STRUCT field or ARRAY(BIGINT) element cut off
// ("bigint-fraction": gen_schema/strict_int_from_float; rekuiper refuses
// such a row), and, with strict validation, a null ARRAY column an empty
// array ("strict-null-array": Go's typed nil slice, written as null but
// indexed as empty). names lists the transformations that changed
// something.
func inputsAsEKuiperReads(o Outcome, funcs *function.Registry) (names []string, used string, ok bool) {
	if funcs == nil || o.Kind != Differs {
		return nil, "", false
	}
	// The smallest change that explains the difference names it.
	for _, try := range []struct{ trunc, nullArrays bool }{{true, false}, {false, true}, {true, true}} {
		c, changed := asEKuiperReads(o.Case, try.trunc, try.nullArrays)
		if !changed {
			continue
		}
		actual, err := conformance.Replay(c, c.Rule.Options, funcs)
		if err != nil {
			continue
		}
		names = names[:0]
		if try.trunc {
			names = append(names, "bigint-fraction")
		}
		if try.nullArrays {
			names = append(names, "strict-null-array")
		}
		if m, _ := conformance.Compare(c.Expected, actual); m == nil {
			return names, "", true
		}
		if used, ok := explainValues(o, c.Expected, conformance.AsExpected(actual)); ok {
			return names, used, true
		}
		// A quirk that eKuiper's reading of the inputs leads to (a
		// negative padding length cut from -1.25).
		read := Outcome{Case: c, Kind: Differs, Actual: actual}
		for _, r := range quirkRules {
			if !r.match(o, funcs) && r.match(read, funcs) {
				return names, r.name, true
			}
		}
	}
	return nil, "", false
}

// asEKuiperReads is c with its inputs as eKuiper reads them: fractions of
// BIGINT values cut off (trunc), null ARRAY columns of strictly validated
// streams empty (nullArrays). changed is false when nothing changed.
func asEKuiperReads(orig *conformance.Case, trunc, nullArrays bool) (c *conformance.Case, changed bool) {
	c = cloneCase(orig)
	c.Expected = orig.Expected
	for _, ddl := range c.Streams {
		m := ddlName.FindStringSubmatch(ddl)
		if m == nil {
			continue
		}
		structs := map[string][]string{}
		body := ddl
		for _, sm := range ddlStruct.FindAllStringSubmatch(ddl, -1) {
			for _, f := range ddlBigint.FindAllStringSubmatch(sm[2], -1) {
				structs[sm[1]] = append(structs[sm[1]], f[1])
			}
			body = strings.Replace(body, sm[0], "", 1)
		}
		cols := ddlBigint.FindAllStringSubmatch(body, -1)
		arrays := ddlArray.FindAllStringSubmatch(body, -1)
		var anyArrays [][]string
		if strings.Contains(ddl, `STRICT_VALIDATION="true"`) {
			anyArrays = ddlAnyArr.FindAllStringSubmatch(body, -1)
		}
		evs := c.Inputs[m[1]]
		for i := range evs {
			data := map[string]any{}
			for k, v := range evs[i].Data {
				data[k] = v
			}
			for _, col := range cols {
				if t, ok := truncFraction(data[col[1]]); ok && trunc {
					data[col[1]], changed = t, true
				}
			}
			for _, col := range anyArrays {
				if v, ok := data[col[1]]; ok && v == nil && nullArrays {
					data[col[1]], changed = []any{}, true
				}
			}
			for _, col := range arrays {
				if arr, ok := data[col[1]].([]any); ok {
					cp := append([]any(nil), arr...)
					for j := range cp {
						if t, ok := truncFraction(cp[j]); ok && trunc {
							cp[j], changed = t, true
						}
					}
					data[col[1]] = cp
				}
			}
			for name, fields := range structs {
				if obj, ok := data[name].(map[string]any); ok {
					cp := map[string]any{}
					for k, v := range obj {
						cp[k] = v
					}
					for _, f := range fields {
						if t, ok := truncFraction(cp[f]); ok && trunc {
							cp[f], changed = t, true
						}
					}
					data[name] = cp
				}
			}
			evs[i].Data = data
		}
	}
	return c, changed
}

// truncFraction cuts a float with a fraction to an integer.
func truncFraction(v any) (int64, bool) {
	f, ok := v.(float64)
	if !ok || f == math.Trunc(f) || math.IsInf(f, 0) || math.IsNaN(f) || math.Abs(f) > 1<<62 {
		return 0, false
	}
	return int64(f), true
}

func describeClass(c string) string {
	if c == Variance || c == Unexplained {
		return c
	}
	var entries []string
	for _, name := range strings.Split(c, "+") {
		entries = append(entries, quirkEntry(name))
	}
	return "quirk " + c + " (" + strings.Join(entries, ", ") + ")"
}

// quirkEntry is the documented entry a quirk's name stands for.
func quirkEntry(name string) string {
	for _, r := range append(refusalRules, quirkRules...) {
		if r.name == name {
			return r.entry
		}
	}
	for _, q := range valueQuirks {
		if q.name == name {
			return q.entry
		}
	}
	for _, q := range rowQuirks {
		if q.name == name {
			return q.entry
		}
	}
	if e, ok := quirkEntries[name]; ok {
		return e
	}
	return "?"
}

// quirkEntries are the entries of the quirks no rule or quirk table names.
var quirkEntries = map[string]string{
	"bigint-fraction":          bigintEntry,
	"strict-null-array":        nullArrayEntry,
	"ekuiper-dropped":          droppedEntry,
	"group-order":              groupOrderEntry,
	"eventtime-end":            eventTimeEndEntry,
	"hopping-lost-rows":        hopLostEntry,
	"session-timeout-lost-row": sessionLostEntry,
}

// sqlHas reports whether the rule's SQL contains any of the fragments
// (case-insensitive).
func sqlHas(o Outcome, frags ...string) bool {
	s := strings.ToLower(o.Case.Rule.SQL)
	for _, f := range frags {
		if strings.Contains(s, strings.ToLower(f)) {
			return true
		}
	}
	return false
}

// ekuiperDataSays reports whether a string value (at any depth) of one of
// eKuiper's data rows contains any of the fragments: an error's text
// emitted as data.
func ekuiperDataSays(o Outcome, frags ...string) bool {
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case string:
			for _, f := range frags {
				if strings.Contains(x, f) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		case map[string]any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	for _, em := range o.Case.Expected {
		for _, r := range em {
			if _, isErr := r["error"]; isErr && len(r) == 1 {
				continue
			}
			if walk(r) {
				return true
			}
		}
	}
	return false
}

// rekuiperSays reports whether one of rekuiper's error rows or its refusal
// contains any of the fragments.
func rekuiperSays(o Outcome, frags ...string) bool {
	texts := []string{}
	if o.Kind == RekuiperRefused {
		texts = append(texts, o.Detail)
	}
	for _, em := range o.Actual {
		for _, r := range em {
			if e, ok := r["error"]; ok && len(r) == 1 {
				texts = append(texts, fmt.Sprint(e))
			}
		}
	}
	for _, t := range texts {
		for _, f := range frags {
			if strings.Contains(t, f) {
				return true
			}
		}
	}
	return false
}

// ekuiperSays reports whether one of eKuiper's error rows or its refusal
// contains any of the fragments.
func ekuiperSays(o Outcome, frags ...string) bool {
	texts := []string{o.Case.OracleError}
	for _, em := range o.Case.Expected {
		for _, r := range em {
			if e, ok := r["error"].(string); ok && len(r) == 1 {
				texts = append(texts, e)
			}
		}
	}
	for _, t := range texts {
		for _, f := range frags {
			if t != "" && strings.Contains(t, f) {
				return true
			}
		}
	}
	return false
}

// refusalRules explain a rule only one engine refused.
var refusalRules = []quirkRule{
	{"ekuiper-validates-syntax", `date_calc("2023-11-14", "1h")`, func(o Outcome, _ *function.Registry) bool {
		return o.Kind == EKuiperRefused && strings.Contains(o.Case.OracleError, "validate function ") &&
			strings.Contains(o.Case.OracleError, " type for parameter ")
	}},
	{"between-low-bound", "v BETWEEN w + 1 AND 3", func(o Outcome, _ *function.Registry) bool {
		// eKuiper's lower bound of BETWEEN is a single operand.
		return o.Kind == EKuiperRefused && strings.Contains(o.Case.OracleError, "expect AND expression after between but found ")
	}},
	{"unary-minus", "SELECT -v", func(o Outcome, _ *function.Registry) bool {
		return o.Kind == EKuiperRefused && strings.Contains(o.Case.OracleError, `found "-", expected expression`)
	}},
	// round(x, d) with d a huge integer does not finish in eKuiper.
	{"round-huge-digits", "round(2.5, v)", roundHugeDigits},
	{"literal-argument-at-creation", "rand_func/s1_120", func(o Outcome, _ *function.Registry) bool {
		// A literal argument of the wrong type, or an invalid literal
		// JSON path, compression method or time zone, is refused at
		// creation where eKuiper fails on every row.
		return o.Kind == RekuiperRefused && rekuiperSays(o, " type for parameter ", "parse json path",
			"unsupported compression method", "unknown time zone")
	}},
}

// quirkRules are tried in order; the first that matches names the class.
var quirkRules = []quirkRule{
	{"operator-precedence", "2 * arr[0]", func(o Outcome, funcs *function.Registry) bool {
		// eKuiper reads x * arr[-1] as (x * arr)[-1]: its error says so,
		// or, where it has none (x null), rekuiper gives its output once
		// the rule is grouped that way.
		return ekuiperSays(o, "}[", "} ->") || groupedAsEKuiper(o, funcs)
	}},
	{"between-high-bound", "v BETWEEN 1 AND 2 + 3", func(o Outcome, _ *function.Registry) bool {
		// eKuiper's upper bound of BETWEEN is a single operand: an
		// operator after it applies to the pair of bounds, an error on
		// every row (v BETWEEN ([1, 2] + 3)).
		return ekuiperSays(o, "{ betweenExpr:{")
	}},
	{"array-join-composite", "diff_misc/array_join_types", func(o Outcome, _ *function.Registry) bool {
		// eKuiper joins an array or object element as its Go syntax
		// ([], [2 3], map[x:1]); rekuiper refuses it.
		return sqlHas(o, "array_join(") && rekuiperSays(o, "array elements should be string, number or bool")
	}},
	{"datetime-nil", "gen_func_datetime/datetime_nil", func(o Outcome, _ *function.Registry) bool {
		return ekuiperSays(o, "unsupported type to convert to timestamp <nil>", "<nil>(<nil>) to datetime")
	}},
	{"acc-nil", "gen_analytic/acc_int_values", func(o Outcome, _ *function.Registry) bool {
		// eKuiper's acc_avg, acc_min and acc_max fail on nil.
		return ekuiperSays(o, "call func acc_avg error", "call func acc_min error", "call func acc_max error")
	}},
	{"integer-literal", "gen_func_array/array_position_literal_int", func(o Outcome, _ *function.Registry) bool {
		// eKuiper's functions that want an integer refuse its own integer
		// literals (Go int, not int64) at run time.
		return ekuiperSays(o, "argument should be int", "parameter should be int")
	}},
	{"chr-code-point", "gen_func_conv/chr", func(o Outcome, _ *function.Registry) bool {
		// eKuiper's chr answers the code point as an integer (wrapped to
		// 32 bits); rekuiper's makes a character, and a number that is no
		// code point is an error.
		return sqlHas(o, "chr(") && (rekuiperSays(o, "is not a valid code point", "chr expects a single character") || chrAnswersIntegers(o))
	}},
	{"integer-overflow", "gen_expr/int_overflow", func(o Outcome, _ *function.Registry) bool {
		// eKuiper wraps bigint arithmetic around; rekuiper reports it.
		return rekuiperSays(o, "integer overflow")
	}},
	{"lenient-date-string", `"22:13:20"`, func(o Outcome, _ *function.Registry) bool {
		// eKuiper reads strings such as "12" (an hour) or "2023" (a year)
		// as datetimes; rekuiper refuses them.
		return rekuiperSays(o, "to datetime") && rekuiperSays(o, "cannot convert string(")
	}},
	{"arrow-on-non-object", "o->b", func(o Outcome, _ *function.Registry) bool {
		// eKuiper reads o->b, o not an object, as o -> (the column b).
		return ekuiperSays(o, ") -> ")
	}},
	{"error-text-as-value", "diff_window/collect_error_text", func(o Outcome, _ *function.Registry) bool {
		// collect() keeps the error's text; merge_agg() skips it as a
		// value that is not an object.
		return ekuiperDataSays(o, "invalid operation", "cannot convert") ||
			aggOfExpr.MatchString(o.Case.Rule.SQL) && rekuiperSays(o, "invalid operation")
	}},
	{"percentile-edges", "gen_agg/percentile_edges", func(o Outcome, _ *function.Registry) bool {
		// eKuiper fails on percentile 0 (and other edges of its
		// statistics library).
		return ekuiperSays(o, "Input is outside of range")
	}},
	{"negative-padding", "diff_funcs/pads", func(o Outcome, _ *function.Registry) bool {
		// rpad/lpad by a negative length stop eKuiper's output.
		return sqlHas(o, "rpad(", "lpad(") && rekuiperSays(o, "padding length must not be negative")
	}},
	{"huge-padding", "diff_funcs/pads_huge", hugePadding},
	{"negative-repeat", "diff_funcs/repeat_negative", func(o Outcome, _ *function.Registry) bool {
		// repeat by a negative count stops eKuiper's output (a panic).
		return sqlHas(o, "repeat(") && ekuiperStopped(o) &&
			rekuiperSays(o, "repeat: second argument should be between 0 and 1000000, got -")
	}},
	{"huge-repeat", "diff_funcs/repeat_huge", hugeRepeat},
	{"composite-element-panic", "diff_funcs/array_compare_objects", func(o Outcome, _ *function.Registry) bool {
		// eKuiper's array functions that compare elements with == or
		// hash them panic on an object or array, which stops the rule.
		return ekuiperStopped(o) && comparingArrayCall.MatchString(o.Case.Rule.SQL)
	}},
	{"format-time-pattern", "diff_funcs/format_time_pattern_type", func(o Outcome, _ *function.Registry) bool {
		return sqlHas(o, "format_time(") && rekuiperSays(o, "the format should be a string")
	}},
	{"round-digits", "diff_funcs/round_digits_fraction", func(o Outcome, _ *function.Registry) bool {
		return sqlHas(o, "round(") && rekuiperSays(o, "the second argument must be an integer")
	}},
	{"integer-literal-match", "gen_func_array/array_position_literal_int", func(o Outcome, _ *function.Registry) bool {
		// An integer literal never matches an element in eKuiper.
		return intLiteralArg.MatchString(o.Case.Rule.SQL)
	}},
	{"split-value-index", "diff_funcs/split_value_index", func(o Outcome, _ *function.Registry) bool {
		return sqlHas(o, "split_value(") && rekuiperSays(o, "to int")
	}},
	{"aggregate-mixed-numbers", "gen_agg/sum_float_then_int", func(o Outcome, _ *function.Registry) bool {
		return ekuiperSays(o, "requires float64 but found", "requires int64 but found")
	}},
	{"aggregate-nil", "gen_agg_windows/stats_state", func(o Outcome, _ *function.Registry) bool {
		return ekuiperSays(o, "<nil> should be number", "to int slice for the", "to float slice for the")
	}},
	{"like", "diff_expr/like_null", func(o Outcome, _ *function.Registry) bool { return sqlHas(o, " LIKE ") }},
}

// comparingArrayCall finds a call of eKuiper's array functions that
// compare elements with Go's == or use them as map keys, over one of the
// generator's columns that can hold objects (o, arr).
var comparingArrayCall = regexp.MustCompile(`(?i)\b(array_position|array_last_position|array_contains|array_remove|array_intersect|array_union|array_except|array_distinct)\([^()]*\b(o|arr)\b`)

// ekuiperStopped reports whether eKuiper's output is a strict prefix of
// rekuiper's, up to the value quirks: its rule stopped emitting (a panic)
// where rekuiper went on.
func ekuiperStopped(o Outcome) bool {
	if o.Kind != Differs || len(o.Case.Expected) >= len(o.Actual) {
		return false
	}
	prefix := conformance.AsExpected(o.Actual[:len(o.Case.Expected)])
	if m, _ := conformance.Compare(o.Case.Expected, prefix); m == nil {
		return true
	}
	_, ok := explainValues(o, o.Case.Expected, prefix)
	return ok
}

// chrAnswersIntegers reports whether every value eKuiper gave a chr()
// column is an integer.
func chrAnswersIntegers(o Outcome) bool {
	aliases := selectAliases(o.Case.Rule.SQL)
	seen := false
	for _, em := range o.Case.Expected {
		for _, r := range em {
			for col, v := range r {
				if !strings.HasPrefix(aliases[col], "chr(") {
					continue
				}
				if !isInt(v) {
					return false
				}
				seen = true
			}
		}
	}
	return seen
}

func isInt(v any) bool {
	switch v.(type) {
	case int64, int:
		return true
	}
	return false
}

func isNumber(v any) bool { return isInt(v) || isFloat(v) }

func isFloat(v any) bool {
	_, ok := v.(float64)
	return ok
}

func isNaNOrInf(v any) bool {
	s, ok := v.(string)
	return ok && (s == "NaN" || s == "+Inf" || s == "-Inf")
}

// compositeArg reports whether a call's arguments use one of the
// generator's array or object columns (arr, o and their parts).
func compositeArg(call string) bool {
	i := strings.IndexByte(call, '(')
	if i < 0 {
		return false
	}
	return usesName(call[i:], "arr") || usesName(call[i:], "o")
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func hasFuncPrefix(expr string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(expr, p) {
			return true
		}
	}
	return false
}
