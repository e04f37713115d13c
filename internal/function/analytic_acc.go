package function

import (
	"errors"
	"fmt"

	"github.com/rekuiper/rekuiper/internal/value"
)

// accKernel is one rule-lifetime accumulator (acc_sum, acc_count, ...). exec
// folds a non-nil value into the state (failing without touching it), result
// reads the running value and reset clears the state.
type accKernel struct {
	exec   func(st State, v float64)
	result func(st State) any
	reset  func(st State)
	// anyValue makes exec accept every non-nil value (acc_count); otherwise
	// values must be numbers.
	anyValue bool
}

// State keys of the accumulators.
const (
	accKeyBegun = "begun"
	accKeySum   = "sum"
	accKeyCount = "n"
	accKeyValue = "v"
)

// errAccNotNumber is eKuiper's error for a non-numeric accumulator input.
var errAccNotNumber = errors.New("the value should be number")

// analyticAcc adapts an accumulator to acc_x(expr[, startCond, resetCond]).
//
// With one argument every valid row is accumulated. With three, the
// accumulator only runs between a start and a reset: a row whose startCond is
// true begins accumulating (that row included); a row whose resetCond is true
// is still accumulated and answered, then the state is cleared and waits for
// the next start. A nil condition counts as false.
//
// Nil values are skipped (eKuiper fails acc_avg/acc_min/acc_max with "the
// value should be number" on nil); non-numbers are an error. An invalid row
// (OVER WHEN false) answers the running value and changes nothing.
func analyticAcc(k accKernel) AnalyticFunc {
	return func(_ Env, st State, valid bool, args []any) (any, error) {
		if len(args) == 1 {
			if valid {
				if err := accFold(k, st, args[0]); err != nil {
					return nil, err
				}
			}
			return k.result(st), nil
		}
		if len(args) != 3 {
			return nil, fmt.Errorf("expect 1 or 3 arguments but found %d", len(args))
		}
		if !valid {
			return k.result(st), nil
		}
		start, err := accCondition(args[1], "start")
		if err != nil {
			return nil, err
		}
		reset, err := accCondition(args[2], "reset")
		if err != nil {
			return nil, err
		}
		begun, _ := st[accKeyBegun].(bool)
		begun = begun || start
		if begun {
			if err := accFold(k, st, args[0]); err != nil {
				return nil, err
			}
		}
		out := k.result(st)
		if begun && reset {
			k.reset(st)
			begun = false
		}
		st[accKeyBegun] = begun
		return out, nil
	}
}

// accFold folds v into the accumulator: nil is skipped, a non-number is an
// error (except for acc_count) and leaves the state untouched.
func accFold(k accKernel, st State, v any) error {
	if v == nil {
		return nil
	}
	f, ok := accNumber(v)
	if !ok && !k.anyValue {
		return errAccNotNumber
	}
	k.exec(st, f)
	return nil
}

// accNumber converts an int64 or float64 to float64.
func accNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// accCondition reads a start/reset condition: a bool, nil meaning false.
func accCondition(v any, what string) (bool, error) {
	switch x := v.(type) {
	case nil:
		return false, nil
	case bool:
		return x, nil
	}
	return false, fmt.Errorf("the %s condition should be a bool but got %s", what, value.Describe(v))
}

// accSumKernel: float64 running sum, 0.0 before any value.
func accSumKernel() accKernel {
	return accKernel{
		exec: func(st State, v float64) {
			s, _ := st[accKeySum].(float64)
			st[accKeySum] = s + v
		},
		result: func(st State) any {
			s, _ := st[accKeySum].(float64)
			return s
		},
		reset: func(st State) { delete(st, accKeySum) },
	}
}

// accCountKernel: int64 count of non-nil values, 0 before any.
func accCountKernel() accKernel {
	return accKernel{
		anyValue: true,
		exec: func(st State, _ float64) {
			n, _ := st[accKeyCount].(int64)
			st[accKeyCount] = n + 1
		},
		result: func(st State) any {
			n, _ := st[accKeyCount].(int64)
			return n
		},
		reset: func(st State) { delete(st, accKeyCount) },
	}
}

// accExtremeKernel: float64 running max (sign 1) or min (sign -1); nil before
// any value (eKuiper answers 0).
func accExtremeKernel(sign float64) accKernel {
	return accKernel{
		exec: func(st State, v float64) {
			cur, ok := st[accKeyValue].(float64)
			if !ok || (sign > 0 && v > cur) || (sign < 0 && v < cur) {
				st[accKeyValue] = v
			}
		},
		result: func(st State) any { return st[accKeyValue] },
		reset:  func(st State) { delete(st, accKeyValue) },
	}
}

// accAvgKernel: float64 running mean; nil before any value (eKuiper answers
// 0).
func accAvgKernel() accKernel {
	return accKernel{
		exec: func(st State, v float64) {
			s, _ := st[accKeySum].(float64)
			n, _ := st[accKeyCount].(int64)
			st[accKeySum] = s + v
			st[accKeyCount] = n + 1
		},
		result: func(st State) any {
			n, _ := st[accKeyCount].(int64)
			if n == 0 {
				return nil
			}
			s, _ := st[accKeySum].(float64)
			return s / float64(n)
		},
		reset: func(st State) {
			delete(st, accKeySum)
			delete(st, accKeyCount)
		},
	}
}
