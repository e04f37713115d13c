package function

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/rekuiper/rekuiper/internal/value"
)

// aggKernel is an aggregate written as a fold over a State. The same kernel
// serves the windowed aggregate (a fresh State per group, one step per row)
// and its inc_* analytic twin (the call site's State, kept for the rule
// lifetime). step must either fail without touching st or succeed; result
// must not hand out a slice or map that a later step mutates.
type aggKernel struct {
	step   func(st State, args []any) error
	result func(st State) any
}

// aggregate adapts k to the AggregateFunc contract: one step per row of the
// group, in order.
func (k aggKernel) aggregate() AggregateFunc {
	return func(_ Env, cols [][]any) (any, error) {
		st := State{}
		n := aggRowCount(cols)
		row := make([]any, len(cols))
		for i := range n {
			for j := range cols {
				row[j] = cols[j][i]
			}
			if err := k.step(st, row); err != nil {
				return nil, err
			}
		}
		return k.result(st), nil
	}
}

// incremental adapts k to the AnalyticFunc contract: the row is folded into
// the call site's state when valid, and the running result is returned.
func (k aggKernel) incremental() AnalyticFunc {
	return func(_ Env, st State, valid bool, args []any) (any, error) {
		if valid {
			if err := k.step(st, args); err != nil {
				return nil, err
			}
		}
		return k.result(st), nil
	}
}

// aggRowCount is the number of rows of a group: the length of its shortest
// argument column (all columns have the same length by contract).
func aggRowCount(cols [][]any) int {
	if len(cols) == 0 {
		return 0
	}
	n := len(cols[0])
	for _, c := range cols[1:] {
		n = min(n, len(c))
	}
	return n
}

// State keys used by the kernels.
const (
	aggKeyCount = "n"
	aggKeySum   = "sum"
	aggKeyValue = "v"
	aggKeyItems = "items"
)

// aggCountKernel counts non-nil values (count(*) gets rows, never nil).
func aggCountKernel() aggKernel {
	return aggKernel{
		step: func(st State, args []any) error {
			if args[0] != nil {
				n, _ := st[aggKeyCount].(int64)
				st[aggKeyCount] = n + 1
			}
			return nil
		},
		result: func(st State) any {
			n, _ := st[aggKeyCount].(int64)
			return n
		},
	}
}

// aggAddNumber adds v to a running sum that stays int64 while every value is
// an integer and becomes float64 once a float is seen. A nil sum is empty.
func aggAddNumber(sum, v any) (any, error) {
	switch x := v.(type) {
	case int64:
		switch s := sum.(type) {
		case nil:
			return x, nil
		case int64:
			return value.Arith(value.Add, s, x) // an overflow is an error, not a wrap
		case float64:
			return s + float64(x), nil
		}
	case float64:
		switch s := sum.(type) {
		case nil:
			return x, nil
		case int64:
			return float64(s) + x, nil
		case float64:
			return s + x, nil
		}
	}
	return nil, aggRequiresNumber(sum, v)
}

// aggAddToSum adds a non-nil v to st's running sum; added reports that it
// did. On an error st is left as it was.
func aggAddToSum(st State, v any) (added bool, err error) {
	if v == nil {
		return false, nil
	}
	s, err := aggAddNumber(st[aggKeySum], v)
	if err != nil {
		return false, err
	}
	st[aggKeySum] = s
	return true, nil
}

// aggRequiresNumber is the error for a non-numeric value in a numeric
// aggregate, worded like eKuiper's: "requires int but found string(x)".
func aggRequiresNumber(acc, v any) error {
	kind := "int"
	if _, ok := acc.(float64); ok {
		kind = "float64"
	}
	return fmt.Errorf("requires %s but found %s", kind, value.Describe(v))
}

// aggSumKernel sums non-nil numbers; the result is int64 for all-integer
// input, float64 as soon as one float is present, nil when there is nothing.
func aggSumKernel() aggKernel {
	return aggKernel{
		step: func(st State, args []any) error {
			_, err := aggAddToSum(st, args[0])
			return err
		},
		result: func(st State) any { return st[aggKeySum] },
	}
}

// aggAvgKernel averages non-nil numbers as float64 (also for integer input);
// nil when there is nothing.
func aggAvgKernel() aggKernel {
	return aggKernel{
		step: func(st State, args []any) error {
			added, err := aggAddToSum(st, args[0])
			if !added {
				return err
			}
			n, _ := st[aggKeyCount].(int64)
			st[aggKeyCount] = n + 1
			return nil
		},
		result: func(st State) any {
			n, _ := st[aggKeyCount].(int64)
			if n == 0 {
				return nil
			}
			s, _ := value.ToFloat(st[aggKeySum])
			return s / float64(n)
		},
	}
}

// aggOrder orders two values of an ordered kind: numbers (int64 and float64
// together), strings, datetimes. Other kinds, or a mix, are an error naming
// the kind already held.
func aggOrder(held, v any) (int, error) {
	switch h := held.(type) {
	case int64:
		switch x := v.(type) {
		case int64:
			return aggCmp(x, h), nil
		case float64:
			return aggCmp(x, float64(h)), nil
		}
	case float64:
		switch x := v.(type) {
		case int64:
			return aggCmp(float64(x), h), nil
		case float64:
			return aggCmp(x, h), nil
		}
	case string:
		if x, ok := v.(string); ok {
			return aggCmp(x, h), nil
		}
	case time.Time:
		if x, ok := v.(time.Time); ok {
			return x.Compare(h), nil
		}
	}
	return 0, fmt.Errorf("requires %s but found %s", aggKindName(held), value.Describe(v))
}

func aggCmp[T int64 | float64 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// aggKindName names a value's kind in "requires X but found Y" errors.
func aggKindName(v any) string {
	switch v.(type) {
	case int64:
		return "int"
	case float64:
		return "float64"
	case string:
		return "string"
	case time.Time:
		return "datetime"
	}
	return "number, string or datetime"
}

// aggCheckOrdered rejects a first value that max/min cannot order.
func aggCheckOrdered(v any) error {
	switch v.(type) {
	case int64, float64, string, time.Time:
		return nil
	}
	return fmt.Errorf("requires number, string or datetime but found %s", value.Describe(v))
}

// aggExtremeKernel keeps the largest (sign 1) or smallest (sign -1) non-nil
// value. The value is returned as it came (an int stays int64).
func aggExtremeKernel(sign int) aggKernel {
	return aggKernel{
		step: func(st State, args []any) error {
			v := args[0]
			if v == nil {
				return nil
			}
			held, ok := st[aggKeyValue]
			if !ok {
				if err := aggCheckOrdered(v); err != nil {
					return err
				}
				st[aggKeyValue] = v
				return nil
			}
			c, err := aggOrder(held, v)
			if err != nil {
				return err
			}
			if c*sign > 0 {
				st[aggKeyValue] = v
			}
			return nil
		},
		result: func(st State) any { return st[aggKeyValue] },
	}
}

// aggCollectKernel collects every value, nil included. With no rows the
// result is a nil []any (typed), which JSON sinks write as null.
func aggCollectKernel() aggKernel {
	return aggKernel{
		step: func(st State, args []any) error {
			items, _ := st[aggKeyItems].([]any)
			st[aggKeyItems] = append(items, args[0])
			return nil
		},
		result: func(st State) any {
			items, _ := st[aggKeyItems].([]any)
			if items == nil {
				return []any(nil)
			}
			return append([]any(nil), items...)
		},
	}
}

// aggMergeKernel merges object values into one object, later keys winning;
// non-object values are skipped. The result is never nil ({} when empty).
func aggMergeKernel() aggKernel {
	return aggKernel{
		step: func(st State, args []any) error {
			m, ok := args[0].(map[string]any)
			if !ok {
				return nil
			}
			acc, _ := st[aggKeyValue].(map[string]any)
			if acc == nil {
				acc = make(map[string]any, len(m))
				st[aggKeyValue] = acc
			}
			maps.Copy(acc, m)
			return nil
		},
		result: func(st State) any {
			acc, _ := st[aggKeyValue].(map[string]any)
			if len(acc) == 0 {
				// No key was merged (no object, or only empty ones): nil,
				// as in eKuiper, not {}.
				return nil
			}
			out := make(map[string]any, len(acc))
			maps.Copy(out, acc)
			return out
		},
	}
}

// errAggNotBool is the error for a non-boolean ignoreNull argument.
var errAggNotBool = errors.New("second argument is not a bool")

// aggLastValueKernel keeps the last value (args: value, ignoreNull). With
// ignoreNull a nil value leaves the previous one. A nil value is accepted
// even when ignoreNull is not a boolean, as eKuiper does (the check happens
// only for values that would be stored).
func aggLastValueKernel() aggKernel {
	return aggKernel{
		step: func(st State, args []any) error {
			v := args[0]
			ignoreNull, ok := args[1].(bool)
			if v == nil {
				if ok && !ignoreNull {
					st[aggKeyValue] = nil
				}
				return nil
			}
			if !ok {
				return errAggNotBool
			}
			st[aggKeyValue] = v
			return nil
		},
		result: func(st State) any { return st[aggKeyValue] },
	}
}
