package function

import (
	"fmt"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// registerAggregate registers the aggregate functions. Each gets, per
// argument, the column of values over the group's rows (see AggregateFunc).
// Common rules:
//   - nil values are skipped; an empty or all-nil group gives nil, except
//     count (0), collect (a nil []any, written as null) and merge_agg ({}).
//   - sum/max/min keep the input type (int64 stays int64; sum turns float64
//     once a float is seen); avg, median, stddev*, var*, percentile_* are
//     float64.
//   - deduplicate needs the group's rows: the evaluator appends, after the two
//     user arguments, a third column holding each row as map[string]any (what
//     a `*` argument would give). Without it the key values are returned.
func registerAggregate(r *Registry) {
	agg := func(name string, minArgs, maxArgs int, f AggregateFunc) *Def {
		return &Def{Name: name, Kind: Aggregate, MinArgs: minArgs, MaxArgs: maxArgs, Aggregate: f, Accumulate: newAccumulator(name)}
	}
	last := agg("last_value", 2, 2, aggLastValueKernel().aggregate())
	last.Validate = aggValidateBoolLiteral(1)
	dedup := agg("deduplicate", 2, 2, aggDeduplicate)
	dedup.Validate = aggValidateBoolLiteral(1)
	pcont := agg("percentile_cont", 2, 2, aggPercentileCont)
	pcont.Aliases = []string{"percentile"}
	pcont.Validate = aggValidatePercentile
	pdisc := agg("percentile_disc", 2, 2, aggPercentileDisc)
	pdisc.Validate = aggValidatePercentile
	r.MustAdd(
		agg("count", 1, 1, aggCountKernel().aggregate()),
		agg("sum", 1, 1, aggSumKernel().aggregate()),
		agg("avg", 1, 1, aggAvgKernel().aggregate()),
		agg("max", 1, 1, aggExtremeKernel(1).aggregate()),
		agg("min", 1, 1, aggExtremeKernel(-1).aggregate()),
		agg("collect", 1, 1, aggCollectKernel().aggregate()),
		agg("merge_agg", 1, 1, aggMergeKernel().aggregate()),
		last,
		dedup,
		agg("median", 1, 1, aggMedian),
		agg("stddev", 1, 1, aggVarianceFunc(false, true)),
		agg("stddevs", 1, 1, aggVarianceFunc(true, true)),
		agg("var", 1, 1, aggVarianceFunc(false, false)),
		agg("vars", 1, 1, aggVarianceFunc(true, false)),
		pcont,
		pdisc,
	)
}

// aggLiteral strips parentheses around a literal argument.
func aggLiteral(e ast.Expr) ast.Expr {
	for {
		p, ok := e.(*ast.ParenExpr)
		if !ok {
			return e
		}
		e = p.X
	}
}

// aggValidateBoolLiteral rejects a non-boolean literal at argument i
// (0-based). Non-literal expressions are checked at run time.
func aggValidateBoolLiteral(i int) func(args []ast.Expr) error {
	return func(args []ast.Expr) error {
		if i >= len(args) {
			return nil
		}
		switch aggLiteral(args[i]).(type) {
		case *ast.IntegerLit, *ast.NumberLit, *ast.StringLit, *ast.TimeUnitLit:
			return fmt.Errorf("expect bool type for parameter %d", i+1)
		}
		return nil
	}
}

// aggValidatePercentile checks a literal percentile is a number in [0, 1].
func aggValidatePercentile(args []ast.Expr) error {
	if len(args) < 2 {
		return nil
	}
	var p float64
	switch x := aggLiteral(args[1]).(type) {
	case *ast.IntegerLit:
		p = float64(x.Val)
	case *ast.NumberLit:
		p = x.Val
	case *ast.StringLit, *ast.BoolLit, *ast.TimeUnitLit:
		return fmt.Errorf("expect number type for parameter 2")
	default:
		return nil
	}
	if p < 0 || p > 1 {
		return fmt.Errorf("the percentile should be between 0 and 1 but got %v", p)
	}
	return nil
}
