package value

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"
)

// Op is an arithmetic, bitwise or comparison operator.
type Op int

const (
	Add Op = iota
	Sub
	Mul
	Div
	Mod
	BitAnd
	BitOr
	BitXor
	Eq
	Neq
	Lt
	Lte
	Gt
	Gte
)

var opText = [...]string{"+", "-", "*", "/", "%", "&", "|", "^", "=", "!=", "<", "<=", ">", ">="}

func (o Op) String() string { return opText[o] }

// ErrDivideByZero is returned by / and % with a zero divisor.
var ErrDivideByZero = errors.New("divided by zero")

// ErrOverflow is returned when an integer result does not fit in bigint
// (int64): +, -, *, / and unary minus, and conversions of out-of-range
// floats to bigint. eKuiper wraps around silently; rekuiper refuses.
var ErrOverflow = errors.New("integer overflow")

func overflow(op Op, a, b int64) error {
	return fmt.Errorf("%w: %d %s %d does not fit in bigint", ErrOverflow, a, op, b)
}

func invalid(op Op, l, r any) error {
	return fmt.Errorf("invalid operation %s %s %s", Describe(l), op, Describe(r))
}

// Arith applies an arithmetic or bitwise operator. nil on either side gives
// nil. int64 op int64 stays int64; a result that does not fit is an
// ErrOverflow error (eKuiper wraps around);
// mixing int64 and float64 gives float64; bitwise operators take integers
// only. Anything else is an "invalid operation" error.
func Arith(op Op, l, r any) (any, error) {
	if l == nil || r == nil {
		return nil, nil
	}
	switch lv := l.(type) {
	case int64:
		switch rv := r.(type) {
		case int64:
			return intArith(op, lv, rv, l, r)
		case float64:
			if op >= BitAnd {
				return nil, invalid(op, l, r)
			}
			return floatArith(op, float64(lv), rv, l, r)
		}
	case float64:
		if op >= BitAnd {
			return nil, invalid(op, l, r)
		}
		switch rv := r.(type) {
		case int64:
			return floatArith(op, lv, float64(rv), l, r)
		case float64:
			return floatArith(op, lv, rv, l, r)
		}
	case time.Time:
		// datetime - datetime gives the difference in ms; datetime ± int ms.
		switch rv := r.(type) {
		case time.Time:
			if op == Sub {
				return lv.Sub(rv).Milliseconds(), nil
			}
		case int64:
			switch op {
			case Add:
				return lv.Add(time.Duration(rv) * time.Millisecond), nil
			case Sub:
				return lv.Add(-time.Duration(rv) * time.Millisecond), nil
			}
		}
	}
	return nil, invalid(op, l, r)
}

func intArith(op Op, a, b int64, l, r any) (any, error) {
	switch op {
	case Add:
		s := a + b
		if (s > a) != (b > 0) {
			return nil, overflow(op, a, b)
		}
		return s, nil
	case Sub:
		d := a - b
		if (d < a) != (b > 0) {
			return nil, overflow(op, a, b)
		}
		return d, nil
	case Mul:
		if a == 0 || b == 0 {
			return int64(0), nil
		}
		p := a * b
		if (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) || p/b != a {
			return nil, overflow(op, a, b)
		}
		return p, nil
	case Div:
		if b == 0 {
			return nil, ErrDivideByZero
		}
		if a == math.MinInt64 && b == -1 {
			return nil, overflow(op, a, b)
		}
		return a / b, nil
	case Mod:
		if b == 0 {
			return nil, ErrDivideByZero
		}
		if b == -1 {
			// the remainder is 0; Go's MinInt64 % -1 is 0 too, but say so
			// rather than rely on it
			return int64(0), nil
		}
		return a % b, nil
	case BitAnd:
		return a & b, nil
	case BitOr:
		return a | b, nil
	case BitXor:
		return a ^ b, nil
	}
	return nil, invalid(op, l, r)
}

func floatArith(op Op, a, b float64, l, r any) (any, error) {
	switch op {
	case Add:
		return a + b, nil
	case Sub:
		return a - b, nil
	case Mul:
		return a * b, nil
	case Div:
		if b == 0 {
			return nil, ErrDivideByZero
		}
		return a / b, nil
	case Mod:
		if b == 0 {
			return nil, ErrDivideByZero
		}
		return math.Mod(a, b), nil
	}
	return nil, invalid(op, l, r)
}

// Compare applies a comparison operator. A nil operand makes every
// comparison false (eKuiper semantics; use IS NULL to test for null).
// Numbers compare across int64/float64; strings with strings; bools with
// bools (= and != only); datetimes with datetimes, numbers (epoch ms) and
// strings (parsed); arrays and objects with = and != only. Other mixes are
// "invalid operation" errors.
func Compare(op Op, l, r any) (bool, error) {
	if l == nil || r == nil {
		return false, nil
	}
	c, ok, err := order(l, r)
	if err != nil {
		return false, err
	}
	if ok {
		switch op {
		case Eq:
			return c == 0, nil
		case Neq:
			return c != 0, nil
		case Lt:
			return c < 0, nil
		case Lte:
			return c <= 0, nil
		case Gt:
			return c > 0, nil
		case Gte:
			return c >= 0, nil
		}
	}
	// Unordered kinds: only equality.
	switch l.(type) {
	case bool, []any, map[string]any, []byte:
		if reflect.TypeOf(l) == reflect.TypeOf(r) {
			switch op {
			case Eq:
				return Equal(l, r), nil
			case Neq:
				return !Equal(l, r), nil
			}
		}
	}
	return false, invalid(op, l, r)
}

// order returns the ordering of l and r when they are mutually ordered.
func order(l, r any) (int, bool, error) {
	switch lv := l.(type) {
	case int64:
		switch rv := r.(type) {
		case int64:
			return cmpNumber(lv, rv), true, nil
		case float64:
			return cmpNumber(float64(lv), rv), true, nil
		case time.Time:
			return cmpNumber(lv, rv.UnixMilli()), true, nil
		}
	case float64:
		switch rv := r.(type) {
		case int64:
			return cmpNumber(lv, float64(rv)), true, nil
		case float64:
			return cmpNumber(lv, rv), true, nil
		case time.Time:
			return cmpNumber(lv, float64(rv.UnixMilli())), true, nil
		}
	case string:
		switch rv := r.(type) {
		case string:
			switch {
			case lv < rv:
				return -1, true, nil
			case lv > rv:
				return 1, true, nil
			}
			return 0, true, nil
		case time.Time:
			lt, err := ToTime(lv, rv.Location())
			if err != nil {
				return 0, false, err
			}
			return cmpTime(lt, rv), true, nil
		}
	case time.Time:
		switch rv := r.(type) {
		case time.Time:
			return cmpTime(lv, rv), true, nil
		case int64, float64:
			c, ok, err := order(r, l)
			return -c, ok, err
		case string:
			rt, err := ToTime(rv, lv.Location())
			if err != nil {
				return 0, false, err
			}
			return cmpTime(lv, rt), true, nil
		}
	}
	return 0, false, nil
}

// cmpNumber orders two numbers of one type; a NaN compares equal to
// anything (unlike cmp.Compare, which orders it first).
func cmpNumber[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpTime(a, b time.Time) int {
	switch {
	case a.Before(b):
		return -1
	case a.After(b):
		return 1
	}
	return 0
}

// Equal reports deep equality under the value model, with int64 and float64
// comparing numerically.
func Equal(a, b any) bool { return deepEqual(a, b, true) }

// Identical is Equal without numeric conversion: int64 3 and float64 3.0
// differ (how eKuiper compares array elements).
func Identical(a, b any) bool { return deepEqual(a, b, false) }

func deepEqual(a, b any, numeric bool) bool {
	switch av := a.(type) {
	case nil:
		return b == nil
	case int64, float64:
		if !numeric {
			return a == b
		}
		if !IsNumber(b) {
			return false
		}
		c, _, _ := order(a, b)
		return c == 0
	case []byte:
		bv, ok := b.([]byte)
		return ok && bytes.Equal(av, bv)
	case time.Time:
		bv, ok := b.(time.Time)
		return ok && av.Equal(bv)
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !deepEqual(av[i], bv[i], numeric) {
				return false
			}
		}
		return true
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok || !deepEqual(x, y, numeric) {
				return false
			}
		}
		return true
	}
	return a == b
}

// Less orders values for ORDER BY and sorting functions: nil first, then
// numbers, strings, bools (false < true), datetimes; values of different
// kinds order by kind.
func Less(a, b any) bool {
	if c, ok, _ := order(a, b); ok {
		return c < 0
	}
	ka, kb := kindRank(a), kindRank(b)
	if ka != kb {
		return ka < kb
	}
	if x, ok := a.(bool); ok {
		return !x && b.(bool)
	}
	return false
}

func kindRank(v any) int {
	switch v.(type) {
	case nil:
		return 0
	case int64, float64:
		return 1
	case string:
		return 2
	case bool:
		return 3
	case time.Time:
		return 4
	}
	return 5
}
