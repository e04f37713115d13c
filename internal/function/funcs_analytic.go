package function

import (
	"fmt"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/value"
)

// registerAnalytic registers the stateful functions. Each call site (and
// OVER PARTITION BY key) owns a State that lives for the rule's lifetime;
// an invalid row (OVER WHEN false) is answered from the state without
// changing it. State holds only value-model values (int64, float64, bool,
// string, []any, map[string]any, nil), so checkpoints can encode it.
//
// Calling conventions beyond the user's arguments:
//   - changed_cols: the evaluator appends one final argument, a []any of the
//     output column names (strings), one per value argument; the function
//     returns a map[string]any of the changed columns to merge into the row.
//   - inc_count(*) and friends get the row as map[string]any for `*`.
//
// The inc_* functions are the incremental forms of count, sum, avg, max,
// min, merge_agg, collect and last_value: the same fold as the aggregate,
// accumulated per call site for the rule lifetime.
func registerAnalytic(r *Registry) {
	an := func(name string, minArgs, maxArgs int, f AnalyticFunc) *Def {
		return &Def{Name: name, Kind: Analytic, MinArgs: minArgs, MaxArgs: maxArgs, Analytic: f}
	}
	lag := an("lag", 1, 4, analyticLag)
	lag.Validate = analyticValidateLag
	changedCol := an("changed_col", 2, 2, analyticChangedCol)
	changedCol.Validate = aggValidateBoolLiteral(0)
	hadChanged := an("had_changed", 2, -1, analyticHadChanged)
	hadChanged.Validate = aggValidateBoolLiteral(0)
	changedCols := an("changed_cols", 3, -1, analyticChangedCols)
	changedCols.Validate = analyticValidateChangedCols
	r.MustAdd(
		lag,
		an("latest", 1, 2, analyticLatest),
		changedCol,
		hadChanged,
		changedCols,
	)
	for _, acc := range []struct {
		name string
		k    accKernel
	}{
		{"acc_sum", accSumKernel()},
		{"acc_count", accCountKernel()},
		{"acc_min", accExtremeKernel(-1)},
		{"acc_max", accExtremeKernel(1)},
		{"acc_avg", accAvgKernel()},
	} {
		d := an(acc.name, 1, 3, analyticAcc(acc.k))
		d.Validate = analyticValidateAccArity
		r.MustAdd(d)
	}
	r.MustAdd(
		an("inc_count", 1, 1, incNilIsNil(aggCountKernel().incremental())),
		an("inc_sum", 1, 1, incNilIsNil(incFloatSum(aggSumKernel().incremental()))),
		an("inc_avg", 1, 1, incNilIsNil(aggAvgKernel().incremental())),
		an("inc_max", 1, 1, incNilIsNil(aggExtremeKernel(1).incremental())),
		an("inc_min", 1, 1, incNilIsNil(aggExtremeKernel(-1).incremental())),
		an("inc_merge_agg", 1, 1, incNilIsNil(incObjectsOnly(aggMergeKernel().incremental()))),
		an("inc_collect", 1, 1, incNilIsNil(aggCollectKernel().incremental())),
		an("inc_last_value", 2, 2, incNilIsNil(aggLastValueKernel().incremental())),
	)
}

// incNilIsNil gives nil for a row whose argument is nil, an empty array or
// an empty object, and leaves the running state as it was, as eKuiper's
// inc_* functions do (inc_sum(v) is nil on a row without v, not the sum so
// far).
func incNilIsNil(f AnalyticFunc) AnalyticFunc {
	return func(env Env, st State, valid bool, args []any) (any, error) {
		for _, a := range args {
			switch x := a.(type) {
			case nil:
				return nil, nil
			case []any:
				if len(x) == 0 {
					return nil, nil
				}
			case map[string]any:
				if len(x) == 0 {
					return nil, nil
				}
			}
		}
		return f(env, st, valid, args)
	}
}

// incFloatSum makes inc_sum's running sum a float, as eKuiper's is (sum()
// over a window keeps integers integral).
func incFloatSum(f AnalyticFunc) AnalyticFunc {
	return func(env Env, st State, valid bool, args []any) (any, error) {
		v, err := f(env, st, valid, args)
		if i, ok := v.(int64); ok {
			return float64(i), err
		}
		return v, err
	}
}

// incObjectsOnly refuses a non-object argument of inc_merge_agg, as eKuiper
// does, instead of skipping it (nil is still skipped).
func incObjectsOnly(f AnalyticFunc) AnalyticFunc {
	return func(env Env, st State, valid bool, args []any) (any, error) {
		if _, ok := args[0].(map[string]any); !ok && args[0] != nil {
			return nil, fmt.Errorf("inc_merge_agg: the argument should be an object, got %s", value.Describe(args[0]))
		}
		return f(env, st, valid, args)
	}
}

// analyticValidateLag checks lag's literal offset (a positive integer) and
// literal ignoreNull (a bool).
func analyticValidateLag(args []ast.Expr) error {
	if len(args) > 1 {
		switch x := aggLiteral(args[1]).(type) {
		case *ast.IntegerLit:
			if x.Val < 1 {
				return fmt.Errorf("the offset should be a positive integer but got %d", x.Val)
			}
			if x.Val > MaxLagOffset {
				return boundError("lag", "offset", x.Val, MaxLagOffset)
			}
		case *ast.NumberLit, *ast.StringLit, *ast.BoolLit, *ast.TimeUnitLit:
			return fmt.Errorf("expect int type for parameter 2")
		}
	}
	return aggValidateBoolLiteral(3)(args)
}

// analyticValidateChangedCols checks the literal prefix (a string) and the
// literal ignoreNull (a bool).
func analyticValidateChangedCols(args []ast.Expr) error {
	if len(args) == 0 {
		return nil
	}
	switch aggLiteral(args[0]).(type) {
	case *ast.IntegerLit, *ast.NumberLit, *ast.BoolLit, *ast.TimeUnitLit:
		return fmt.Errorf("expect string type for parameter 1")
	}
	return aggValidateBoolLiteral(1)(args)
}

// analyticValidateAccArity accepts acc_* with 1 or 3 arguments.
func analyticValidateAccArity(args []ast.Expr) error {
	if len(args) != 1 && len(args) != 3 {
		return fmt.Errorf("expect 1 or 3 arguments but found %d", len(args))
	}
	return nil
}
