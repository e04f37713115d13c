package function

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"

	"github.com/rekuiper/rekuiper/internal/value"
)

// registerMath adds the math functions. Unless noted, a nil argument gives
// nil, arguments must be int64 or float64 (numeric strings are errors, as in
// eKuiper), results are float64, and a NaN result (domain error) is nil.
// Exceptions: abs keeps the argument's type, sign and the bit functions
// return int64, conv returns a string.
func registerMath(r *Registry) {
	r.MustAdd(
		&Def{
			Name: "abs", Kind: Scalar, MinArgs: 1, MaxArgs: 1,
			Validate: mathValidateArgs(mathNumber),
			Scalar:   mathAbs,
		},
		mathAliased(mathUnary("ceiling", math.Ceil), "ceil"),
		mathUnary("floor", math.Floor),
		mathDomain(mathUnary("sqrt", math.Sqrt), "the argument must be a positive number but got %v"),
		mathUnary("exp", math.Exp),
		mathUnary("acos", math.Acos),
		mathUnary("asin", math.Asin),
		mathUnary("atan", math.Atan),
		mathUnary("cos", math.Cos),
		mathUnary("cosh", math.Cosh),
		mathUnary("sin", math.Sin),
		mathUnary("sinh", math.Sinh),
		mathUnary("tan", math.Tan),
		mathUnary("tanh", math.Tanh),
		mathUnary("radians", func(d float64) float64 { return d * (math.Pi / 180) }),
		mathUnary("degrees", func(r float64) float64 { return r * (180 / math.Pi) }),
		// ln and log: log of zero is -Inf, which no sink can encode: nil. A
		// negative argument is an error, as in eKuiper and SQL engines.
		mathDomain(mathUnary("ln", func(x float64) float64 { return mathFiniteOrNaN(math.Log(x)) }),
			"the argument must be a strictly positive number but got %v"),
		&Def{
			Name: "log", Kind: Scalar, MinArgs: 1, MaxArgs: 2,
			Validate: mathValidateArgs(mathNumber),
			Scalar:   mathLog,
		},
		&Def{
			Name: "sign", Kind: Scalar, MinArgs: 1, MaxArgs: 1,
			Validate: mathValidateArgs(mathNumber),
			Scalar:   mathSign,
		},
		&Def{
			Name: "cot", Kind: Scalar, MinArgs: 1, MaxArgs: 1,
			Validate: mathValidateArgs(mathNumber),
			Scalar:   mathCot,
		},
		mathBinary("atan2", math.Atan2),
		mathBinary("mod", math.Mod),
		mathAliased(mathBinary("power", math.Pow), "pow"),
		mathBitwise("bitand", func(a, b int64) int64 { return a & b }),
		mathBitwise("bitor", func(a, b int64) int64 { return a | b }),
		mathBitwise("bitxor", func(a, b int64) int64 { return a ^ b }),
		&Def{
			Name: "bitnot", Kind: Scalar, MinArgs: 1, MaxArgs: 1,
			Validate: mathValidateArgs(mathInt),
			Scalar: func(_ Env, args []any) (any, error) {
				if args[0] == nil {
					return nil, nil
				}
				v, ok := mathBitOperand(args[0])
				if !ok {
					return nil, fmt.Errorf("Expect int type for operand but got %v", args[0])
				}
				return ^v, nil
			},
		},
		&Def{
			Name: "pi", Kind: Scalar, MinArgs: 0, MaxArgs: 0,
			Scalar: func(Env, []any) (any, error) { return math.Pi, nil },
		},
		&Def{
			Name: "rand", Kind: Scalar, MinArgs: 0, MaxArgs: 0,
			Scalar: func(Env, []any) (any, error) { return rand.Float64(), nil },
		},
		&Def{
			Name: "round", Kind: Scalar, MinArgs: 1, MaxArgs: 2,
			Validate: mathValidateArgs(mathNumber, mathInt),
			Scalar:   mathRoundFunc,
		},
		&Def{
			Name: "conv", Kind: Scalar, MinArgs: 3, MaxArgs: 3,
			Validate: mathValidateArgs(mathAny, mathInt, mathInt),
			Scalar:   mathConvFunc,
		},
	)
}

// mathAliased sets d's aliases and returns d.
func mathAliased(d *Def, aliases ...string) *Def {
	d.Aliases = aliases
	return d
}

func mathFiniteOrNaN(f float64) float64 {
	if math.IsInf(f, 0) {
		return math.NaN()
	}
	return f
}

func mathAbs(_ Env, args []any) (any, error) {
	switch v := args[0].(type) {
	case nil:
		return nil, nil
	case int64:
		if v == math.MinInt64 {
			return nil, errors.New("abs of -9223372036854775808 overflows bigint")
		}
		if v < 0 {
			return -v, nil
		}
		return v, nil
	case float64:
		return math.Abs(v), nil
	}
	return nil, errors.New("only float64 & int type are supported")
}

func mathLog(_ Env, args []any) (any, error) {
	if mathHasNil(args) {
		return nil, nil
	}
	a, err := mathToFloat(args[0])
	if err != nil {
		return nil, err
	}
	if len(args) == 1 {
		if a < 0 {
			return nil, fmt.Errorf("the argument must be a strictly positive number but got %v", a)
		}
		return mathFloatResult(mathFiniteOrNaN(math.Log10(a))), nil
	}
	x, err := mathToFloat(args[1])
	if err != nil {
		return nil, err
	}
	// log(b, x): base first, as in MySQL and eKuiper.
	r := math.Log(x) / math.Log(a)
	if math.IsNaN(r) {
		return nil, fmt.Errorf("the argument must be a strictly positive number but got %v", a)
	}
	return mathFloatResult(mathFiniteOrNaN(r)), nil
}

func mathSign(_ Env, args []any) (any, error) {
	if args[0] == nil {
		return nil, nil
	}
	x, err := mathToFloat(args[0])
	if err != nil {
		return nil, err
	}
	switch {
	case x > 0:
		return int64(1), nil
	case x < 0:
		return int64(-1), nil
	}
	return int64(0), nil
}

func mathCot(_ Env, args []any) (any, error) {
	if args[0] == nil {
		return nil, nil
	}
	x, err := mathToFloat(args[0])
	if err != nil {
		return nil, err
	}
	// The complex cotangent, as eKuiper computes it, so results agree to
	// the last bit.
	r := real(cmplx.Cot(complex(x, 0)))
	if math.IsInf(r, 0) {
		return nil, errors.New("out-of-range error")
	}
	return mathFloatResult(r), nil
}

// mathBinary builds a two-argument float function.
func mathBinary(name string, f func(a, b float64) float64) *Def {
	return &Def{
		Name: name, Kind: Scalar, MinArgs: 2, MaxArgs: 2,
		Validate: mathValidateArgs(mathNumber, mathNumber),
		Scalar: func(_ Env, args []any) (any, error) {
			if mathHasNil(args) {
				return nil, nil
			}
			a, err := mathToFloat(args[0])
			if err != nil {
				return nil, err
			}
			b, err := mathToFloat(args[1])
			if err != nil {
				return nil, err
			}
			return mathFloatResult(f(a, b)), nil
		},
	}
}

// mathBitwise builds a two-argument bit function; floats are rejected at run
// time with eKuiper's message.
// mathBitOperand reads an operand of a bitwise function: an integer, or a
// float without fraction that fits a bigint (2.0 is 2, as in eKuiper;
// diff_funcs/bits_whole_floats).
func mathBitOperand(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64:
		if x == math.Trunc(x) && x >= -(1<<63) && x < 1<<63 {
			return int64(x), true
		}
	}
	return 0, false
}

func mathBitwise(name string, f func(a, b int64) int64) *Def {
	return &Def{
		Name: name, Kind: Scalar, MinArgs: 2, MaxArgs: 2,
		Validate: mathValidateArgs(mathInt, mathInt),
		Scalar: func(_ Env, args []any) (any, error) {
			if mathHasNil(args) {
				return nil, nil
			}
			a, ok := mathBitOperand(args[0])
			if !ok {
				return nil, fmt.Errorf("Expect int type for the first operand but got %v", args[0])
			}
			b, ok := mathBitOperand(args[1])
			if !ok {
				return nil, fmt.Errorf("Expect int type for the second operand but got %v", args[1])
			}
			return f(a, b), nil
		},
	}
}

func mathRoundFunc(_ Env, args []any) (any, error) {
	if mathHasNil(args) {
		return nil, nil
	}
	v, err := mathToFloat(args[0])
	if err != nil {
		return nil, err
	}
	var prec int64
	if len(args) > 1 {
		if prec, err = mathToInt(args[1]); err != nil {
			return nil, fmt.Errorf("the second argument must be an integer: %w", err)
		}
	}
	return mathRound(v, prec), nil
}

func mathConvFunc(_ Env, args []any) (any, error) {
	if mathHasNil(args) {
		return nil, nil
	}
	from, err := mathToInt(args[1])
	if err != nil {
		return nil, fmt.Errorf("conv from base: %w", err)
	}
	to, err := mathToInt(args[2])
	if err != nil {
		return nil, fmt.Errorf("conv to base: %w", err)
	}
	res, ok := mathConv(value.ToString(args[0]), from, to)
	if !ok {
		return nil, nil
	}
	return res, nil
}
