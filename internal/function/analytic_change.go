package function

import (
	"fmt"
	"strconv"

	"github.com/rekuiper/rekuiper/internal/value"
)

// State keys of the analytic functions in this file.
const (
	analyticKeyHistory = "history" // lag: []any, oldest first
	analyticKeyLatest  = "latest"  // latest, changed_col: last value
	analyticKeyArgPre  = "arg"     // had_changed: "arg1", "arg2", ...
	analyticKeyColPre  = "col:"    // changed_cols: "col:<name>"
)

// analyticLag implements lag(expr[, offset[, default[, ignoreNull]]]). The
// state keeps the last `offset` accepted values ([]any, oldest first). The
// answer is the value `offset` accepted rows back, or the default while fewer
// rows have been accepted. A valid row is accepted after answering, unless it
// is nil and ignoreNull is true, which it is by default (as in eKuiper: a nil
// value is not a step of the history).
func analyticLag(_ Env, st State, valid bool, args []any) (any, error) {
	offset := int64(1)
	if len(args) > 1 {
		o, ok := args[1].(int64)
		if !ok || o < 1 {
			return nil, fmt.Errorf("the offset should be a positive integer but got %s", value.Describe(args[1]))
		}
		if o > MaxLagOffset {
			return nil, boundError("lag", "offset", o, MaxLagOffset)
		}
		offset = o
	}
	var dflt any
	if len(args) > 2 {
		dflt = args[2]
	}
	ignoreNull := true
	if len(args) > 3 {
		b, ok := args[3].(bool)
		if !ok {
			return nil, fmt.Errorf("the fourth argument should be a bool but got %s", value.Describe(args[3]))
		}
		ignoreNull = b
	}
	history, _ := st[analyticKeyHistory].([]any)
	result := dflt
	if int64(len(history)) >= offset {
		result = history[int64(len(history))-offset]
	}
	if valid && (args[0] != nil || !ignoreNull) {
		keep := min(int64(len(history)), offset-1)
		next := make([]any, 0, keep+1)
		next = append(next, history[int64(len(history))-keep:]...)
		st[analyticKeyHistory] = append(next, args[0])
	}
	return result, nil
}

// analyticLatest implements latest(expr[, default]): the latest non-nil value
// of accepted rows, or the default (nil without one) before any.
func analyticLatest(_ Env, st State, valid bool, args []any) (any, error) {
	if valid && args[0] != nil {
		st[analyticKeyLatest] = args[0]
		return args[0], nil
	}
	if v, ok := st[analyticKeyLatest]; ok && v != nil {
		return v, nil
	}
	if len(args) > 1 {
		return args[1], nil
	}
	return nil, nil
}

// analyticIgnoreNull reads the ignoreNull argument at index i.
func analyticIgnoreNull(args []any, i int) (bool, error) {
	b, ok := args[i].(bool)
	if !ok {
		return false, fmt.Errorf("the ignoreNull argument should be a bool but got %s", value.Describe(args[i]))
	}
	return b, nil
}

// analyticChanged compares v with the value stored under key and stores v
// when it differs. The previous value of a fresh state is nil, so a first nil
// is not a change. Numbers compare numerically (1 and 1.0 are equal).
func analyticChanged(st State, key string, v any) bool {
	if value.Equal(v, st[key]) {
		return false
	}
	st[key] = v
	return true
}

// analyticChangedCol implements changed_col(ignoreNull, expr): the value when
// it differs from the last recorded one, else nil. A nil value with
// ignoreNull, or an invalid row, gives nil and records nothing.
func analyticChangedCol(_ Env, st State, valid bool, args []any) (any, error) {
	ignoreNull, err := analyticIgnoreNull(args, 0)
	if err != nil {
		return nil, err
	}
	v := args[1]
	if !valid || (ignoreNull && v == nil) {
		return nil, nil
	}
	if analyticChanged(st, analyticKeyLatest, v) {
		return v, nil
	}
	return nil, nil
}

// analyticHadChanged implements had_changed(ignoreNull, e1, ...): true when
// any argument differs from its last recorded value (each argument is
// tracked separately and all are recorded). Nil values are skipped with
// ignoreNull. An invalid row gives false.
func analyticHadChanged(_ Env, st State, valid bool, args []any) (any, error) {
	ignoreNull, err := analyticIgnoreNull(args, 0)
	if err != nil {
		return nil, err
	}
	if !valid {
		return false, nil
	}
	changed := false
	for i, v := range args[1:] {
		if ignoreNull && v == nil {
			continue
		}
		if analyticChanged(st, analyticKeyArgPre+strconv.Itoa(i+1), v) {
			changed = true
		}
	}
	return changed, nil
}

// analyticChangedCols implements changed_cols(prefix, ignoreNull, e1, ...).
// Calling convention: after the user's arguments the evaluator appends one
// final argument, a []any holding the output column name (string) of each
// e_i, so args = [prefix, ignoreNull, v1..vn, []any{name1..namen}]. The
// result is a map[string]any of the changed columns, keyed prefix+name, to
// merge into the row ({} when nothing changed or the row is invalid). State
// is kept per column name, so `*` expansions over varying schemas work.
func analyticChangedCols(_ Env, st State, valid bool, args []any) (any, error) {
	if len(args) < 4 {
		return nil, fmt.Errorf("changed_cols expects the column names as its last argument")
	}
	prefix, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("the prefix should be a string but got %s", value.Describe(args[0]))
	}
	ignoreNull, err := analyticIgnoreNull(args, 1)
	if err != nil {
		return nil, err
	}
	vals := args[2 : len(args)-1]
	names, ok := args[len(args)-1].([]any)
	if !ok || len(names) != len(vals) {
		return nil, fmt.Errorf("changed_cols expects %d column names as its last argument", len(vals))
	}
	for _, n := range names {
		if _, ok := n.(string); !ok {
			return nil, fmt.Errorf("changed_cols column name should be a string but got %s", value.Describe(n))
		}
	}
	if !valid {
		return nil, nil
	}
	out := make(map[string]any)
	for i, v := range vals {
		name := names[i].(string)
		if m, ok := v.(map[string]any); ok && name == "*" {
			// `*` stands for every column of the row, each tracked on its
			// own, as eKuiper expands it.
			for _, k := range objectSortedKeys(m) {
				changedColsStep(st, out, prefix, k, m[k], ignoreNull)
			}
			continue
		}
		changedColsStep(st, out, prefix, name, v, ignoreNull)
	}
	if len(out) == 0 {
		// Nothing changed: nil, so that an alias of the call is null (as
		// in eKuiper), not an empty object.
		return nil, nil
	}
	return out, nil
}

func changedColsStep(st State, out map[string]any, prefix, name string, v any, ignoreNull bool) {
	if ignoreNull && v == nil {
		return
	}
	if analyticChanged(st, analyticKeyColPre+name, v) {
		out[prefix+name] = v
	}
}
