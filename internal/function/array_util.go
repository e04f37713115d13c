package function

import (
	"errors"
	"fmt"
	"time"

	"github.com/rekuiper/rekuiper/internal/value"
)

var (
	errArrayFirstNotArray  = errors.New("first argument should be array of interface{}")
	errArraySecondNotArray = errors.New("second argument should be array of interface{}")
	errArrayIndex          = errors.New("index out of range")
)

// arraySame reports whether a and b have the same type and value (arrays and
// objects compared deeply). Array membership functions use it: unlike the =
// operator, an integer element never matches a float, which is how eKuiper
// compares array elements.
func arraySame(a, b any) bool { return value.Identical(a, b) }

// arraySetKey is the key set operations deduplicate on. Arrays, objects and
// byte strings have no key (ok false): they are never merged, as in eKuiper.
func arraySetKey(v any) (any, bool) {
	switch x := v.(type) {
	case []any, map[string]any, []byte:
		return nil, false
	case time.Time:
		return arrayTimeKey(x.UnixNano()), true
	}
	return v, true
}

// arrayTimeKey keys datetimes by instant without colliding with int64 keys.
type arrayTimeKey int64

// arraySet tracks the scalar values seen so far.
type arraySet map[any]bool

// add records v and reports whether it was new; values without a key are
// always new.
func (s arraySet) add(v any) bool {
	k, ok := arraySetKey(v)
	if !ok {
		return true
	}
	if s[k] {
		return false
	}
	s[k] = true
	return true
}

func (s arraySet) has(v any) bool {
	k, ok := arraySetKey(v)
	return ok && s[k]
}

// arrayNilIfEmpty returns nil for an empty result, which drops the field
// from the output row as eKuiper does for these functions.
func arrayNilIfEmpty(a []any) any {
	if len(a) == 0 {
		return nil
	}
	return a
}

// arrayExtremum returns the largest (sign 1) or smallest (sign -1) element.
// Numbers compare across int and float; otherwise all elements must be of
// the kind of the first one. A nil element gives nil, an empty array nil.
func arrayExtremum(arr []any, sign int) (any, error) {
	var best any
	for _, v := range arr {
		if v == nil {
			return nil, nil
		}
		if best == nil {
			switch v.(type) {
			case int64, float64, string, time.Time:
			default:
				return nil, fmt.Errorf("array elements should be numbers, strings or datetimes, found %s", value.Describe(v))
			}
			best = v
			continue
		}
		if value.IsNumber(best) != value.IsNumber(v) || (!value.IsNumber(v) && value.TypeName(best) != value.TypeName(v)) {
			return nil, fmt.Errorf("requires %s but found %s", value.TypeName(best), value.Describe(v))
		}
		gt, err := value.Compare(value.Gt, v, best)
		if err != nil {
			return nil, err
		}
		lt, err := value.Compare(value.Lt, v, best)
		if err != nil {
			return nil, err
		}
		if (sign > 0 && gt) || (sign < 0 && lt) {
			best = v
		}
	}
	return best, nil
}

// arrayIntArg converts argument i (0-based) of an array function to int64;
// floats with a fractional part are refused.
func arrayIntArg(v any, ordinal string) (int64, error) {
	n, ok, err := mathIntegral(v)
	if !ok {
		return 0, fmt.Errorf("%s argument should be int", ordinal)
	}
	return n, err
}
