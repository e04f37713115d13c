package function

import (
	"fmt"
	"math"
	"slices"

	"github.com/rekuiper/rekuiper/internal/value"
)

// aggNumbers returns the non-nil values of col as float64, in order. A value
// that is not a number is an error.
func aggNumbers(col []any) ([]float64, error) {
	out := make([]float64, 0, len(col))
	for _, v := range col {
		switch x := v.(type) {
		case nil:
		case int64:
			out = append(out, float64(x))
		case float64:
			out = append(out, x)
		default:
			return nil, fmt.Errorf("%s should be number", value.Describe(v))
		}
	}
	return out, nil
}

// aggSortedNumbers is aggNumbers sorted ascending.
func aggSortedNumbers(col []any) ([]float64, error) {
	xs, err := aggNumbers(col)
	if err != nil {
		return nil, err
	}
	slices.Sort(xs)
	return xs, nil
}

// aggMedian is the middle value as it is (an integer stays an integer, as in
// eKuiper), or the float mean of the two middle values for an even count;
// nil for no values.
func aggMedian(_ Env, cols [][]any) (any, error) {
	xs, err := aggSortedNumbers(cols[0])
	if err != nil {
		return nil, err
	}
	n := len(xs)
	switch {
	case n == 0:
		return nil, nil
	case n%2 == 1:
		mid := xs[n/2]
		// The middle value keeps its type, unless the first value is a
		// float: then the median is a float, as eKuiper computes it over
		// the values as floats.
		for _, v := range cols[0] {
			if v != nil {
				if _, ok := v.(float64); ok {
					return mid, nil
				}
				break
			}
		}
		for _, v := range cols[0] {
			if i, ok := v.(int64); ok && float64(i) == mid {
				return i, nil
			}
		}
		return mid, nil
	}
	return (xs[n/2-1] + xs[n/2]) / 2, nil
}

// aggVariance returns the variance of the non-nil values of col: population
// (divide by n) or sample (divide by n-1). ok is false when there are too few
// values (none, or one for a sample).
func aggVariance(col []any, sample bool) (v float64, ok bool, err error) {
	xs, err := aggNumbers(col)
	if err != nil {
		return 0, false, err
	}
	n := float64(len(xs))
	if len(xs) == 0 || (sample && len(xs) < 2) {
		return 0, false, nil
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / n
	var sq float64
	for _, x := range xs {
		sq += (x - mean) * (x - mean)
	}
	if sample {
		return sq / (n - 1), true, nil
	}
	return sq / n, true, nil
}

// aggVarianceFunc builds var/vars/stddev/stddevs. Too few values give nil
// (SQL NULL) rather than NaN, and so does a variance that overflows
// (values near the float range: eKuiper answers +Inf or NaN, which no JSON
// sink can write).
func aggVarianceFunc(sample, root bool) AggregateFunc {
	return func(_ Env, cols [][]any) (any, error) {
		v, ok, err := aggVariance(cols[0], sample)
		if err != nil || !ok || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, err
		}
		if root {
			return math.Sqrt(v), nil
		}
		return v, nil
	}
}

// aggPercentileArg reads the percentile argument: its first non-null value,
// as in eKuiper (the argument is meant to be a constant). ok is false for an
// empty group. The range is checked by aggPercentileRange once the values
// are known.
func aggPercentileArg(col []any) (p float64, ok bool, err error) {
	if len(col) == 0 {
		return 0, false, nil
	}
	v := col[0]
	for _, x := range col {
		if x != nil {
			v = x
			break
		}
	}
	switch x := v.(type) {
	case int64:
		p = float64(x)
	case float64:
		p = x
	default:
		return 0, false, fmt.Errorf("percentile should be a number but found %s", value.Describe(v))
	}
	return p, true, nil
}

// aggPercentileInput reads the (values, percentile) columns of
// percentile_cont and percentile_disc: the percentile and the values sorted
// ascending. ok is false for an empty group.
func aggPercentileInput(cols [][]any) (p float64, xs []float64, ok bool, err error) {
	p, ok, err = aggPercentileArg(cols[1])
	if err != nil || !ok {
		return 0, nil, false, err
	}
	xs, err = aggSortedNumbers(cols[0])
	if err != nil {
		return 0, nil, false, err
	}
	return p, xs, true, nil
}

// aggPercentileRange checks a percentile is in [0, 1]. It runs after the
// empty (and, for percentile_cont, single-value) groups have been answered,
// as in eKuiper: a group with no values is null whatever the percentile.
func aggPercentileRange(p float64) error {
	if p < 0 || p > 1 || math.IsNaN(p) {
		return fmt.Errorf("percentile %v is outside of range [0, 1]", p)
	}
	return nil
}

// aggPercentileCont is eKuiper's "continuous" percentile: with the rank
// r = p*n, an integral r picks the r-th smallest value and a fractional r
// averages the values at ranks floor(r) and floor(r)+1. Unlike eKuiper, a
// rank below 1 (including p = 0) gives the smallest value instead of an
// "Input is outside of range" error. The arithmetic follows eKuiper's
// (p scaled to percent and back) so results match bit for bit.
func aggPercentileCont(_ Env, cols [][]any) (any, error) {
	p, xs, ok, err := aggPercentileInput(cols)
	if err != nil || !ok {
		return nil, err
	}
	n := len(xs)
	switch n {
	case 0:
		return nil, nil
	case 1:
		return xs[0], nil
	}
	if err := aggPercentileRange(p); err != nil {
		return nil, err
	}
	rank := (p * 100 / 100) * float64(n)
	i := int(rank)
	switch {
	case i < 1:
		return xs[0], nil
	case rank == float64(i):
		return xs[i-1], nil
	case i >= n:
		return xs[n-1], nil
	}
	return (xs[i-1] + xs[i]) / 2, nil
}

// aggPercentileDisc is the nearest-rank percentile: the smallest value whose
// rank is at least ceil(p*n); p = 0 gives the smallest value.
func aggPercentileDisc(_ Env, cols [][]any) (any, error) {
	p, xs, ok, err := aggPercentileInput(cols)
	if err != nil || !ok {
		return nil, err
	}
	n := len(xs)
	if n == 0 {
		return nil, nil
	}
	if err := aggPercentileRange(p); err != nil {
		return nil, err
	}
	switch {
	case p == 1:
		return xs[n-1], nil
	}
	rank := int(math.Ceil(float64(n) * (p * 100) / 100))
	if rank < 1 {
		return xs[0], nil
	}
	return xs[min(rank, n)-1], nil
}

// aggDeduplicate implements deduplicate(key, returnAll). The evaluator passes
// a third column holding each row of the group (as for a `*` argument); the
// result is made of those rows. Without it the key values themselves are
// returned. returnAll true gives the rows whose key is seen for the first
// time, in order; false gives the last row if its key is new in the group,
// else nil.
func aggDeduplicate(_ Env, cols [][]any) (any, error) {
	keys := cols[0]
	if len(keys) == 0 {
		if all, _ := aggFirst(cols[1]).(bool); all {
			return []any(nil), nil
		}
		return nil, nil
	}
	all, ok := cols[1][0].(bool)
	if !ok {
		return nil, errAggNotBool
	}
	items := keys
	if len(cols) > 2 {
		items = cols[2]
	}
	if !all {
		last := len(keys) - 1
		id := aggKeyString(keys[last])
		for _, k := range keys[:last] {
			if aggKeyString(k) == id {
				return nil, nil
			}
		}
		return items[last], nil
	}
	seen := make(map[string]bool, len(keys))
	var out []any
	for i, k := range keys {
		id := aggKeyString(k)
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, items[i])
	}
	return out, nil
}

// aggFirst is col's first value, nil when empty.
func aggFirst(col []any) any {
	if len(col) == 0 {
		return nil
	}
	return col[0]
}

// aggKeyString identifies a value by kind and content for deduplication
// (1 and 1.0 are different keys, as are 1 and "1").
func aggKeyString(v any) string {
	return value.TypeName(v) + ":" + value.ToString(v)
}
