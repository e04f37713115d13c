package function

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// mathTestEnv is a fixed Env for the math, string, conversion and hash tests.
type mathTestEnv struct{ loc *time.Location }

func (e mathTestEnv) Now() time.Time { return time.UnixMilli(1700000000000).In(e.Location()) }
func (e mathTestEnv) Location() *time.Location {
	if e.loc == nil {
		return time.UTC
	}
	return e.loc
}
func (mathTestEnv) RuleID() string { return "test" }

// mathCase is one function call: corpus names the conformance case (suite
// gen_func_*) the inputs and expected value were copied from.
type mathCase struct {
	corpus string
	fn     string
	args   []any
	want   any
	err    string // expected error text (substring); empty means success
}

// mathRunCases calls each case's function through the built-in registry,
// checking arity first as the planner would, and compares results strictly
// (int64 vs float64, and the sign of zero, matter).
func mathRunCases(t *testing.T, cases []mathCase) {
	t.Helper()
	reg := Builtins()
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s/%s#%d", c.corpus, c.fn, i), func(t *testing.T) {
			d, ok := reg.Lookup(c.fn)
			if !ok {
				t.Fatalf("function %s not registered", c.fn)
			}
			if err := d.CheckArity(len(c.args)); err != nil {
				t.Fatalf("arity: %v", err)
			}
			got, err := d.Scalar(mathTestEnv{}, c.args)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("%s(%v) error = %v, want error containing %q (result %#v)", c.fn, c.args, err, c.err, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s(%v) unexpected error: %v", c.fn, c.args, err)
			}
			if !mathSame(got, c.want) {
				t.Fatalf("%s(%v) = %#v (%T), want %#v (%T)", c.fn, c.args, got, got, c.want, c.want)
			}
		})
	}
}

// mathSame is reflect.DeepEqual that also tells -0.0 from 0.0 and treats
// equal instants in different zones as different (zone is observable).
func mathSame(a, b any) bool {
	if fa, ok := a.(float64); ok {
		fb, ok := b.(float64)
		return ok && fa == fb && math.Signbit(fa) == math.Signbit(fb)
	}
	if ta, ok := a.(time.Time); ok {
		tb, ok := b.(time.Time)
		return ok && ta.Equal(tb) && ta.Location().String() == tb.Location().String()
	}
	return reflect.DeepEqual(a, b)
}

func TestMathCorpus(t *testing.T) {
	const onlyNum = "only float64 & int type are supported"
	negZero := math.Copysign(0, -1)
	cases := []mathCase{
		// abs_ceil_floor: abs keeps the type, ceil/floor give floats.
		{"abs_ceil_floor", "abs", []any{int64(7)}, int64(7), ""},
		{"abs_ceil_floor", "abs", []any{2.5}, 2.5, ""},
		{"abs_ceil_floor", "ceil", []any{2.5}, 3.0, ""},
		{"abs_ceil_floor", "ceiling", []any{int64(7)}, 7.0, ""},
		{"abs_ceil_floor", "floor", []any{2.5}, 2.0, ""},
		{"abs_ceil_floor", "floor", []any{int64(7)}, 7.0, ""},
		{"abs_ceil_floor", "abs", []any{int64(-3)}, int64(3), ""},
		{"abs_ceil_floor", "abs", []any{-0.75}, 0.75, ""},
		{"abs_ceil_floor", "ceil", []any{-0.75}, negZero, ""},
		{"abs_ceil_floor", "ceiling", []any{int64(-3)}, -3.0, ""},
		{"abs_ceil_floor", "floor", []any{-0.75}, -1.0, ""},
		{"abs_ceil_floor", "abs", []any{int64(0)}, int64(0), ""},
		{"abs_ceil_floor", "abs", []any{0.0}, 0.0, ""},
		{"abs_ceil_floor", "abs", []any{int64(1024)}, int64(1024), ""},
		{"abs_ceil_floor", "ceil", []any{0.001}, 1.0, ""},
		{"abs_ceil_floor", "floor", []any{0.001}, 0.0, ""},
		// abs_wrong_type
		{"abs_wrong_type", "abs", []any{int64(5)}, int64(5), ""},
		{"abs_wrong_type", "abs", []any{"abc"}, nil, onlyNum},
		{"abs_wrong_type", "abs", []any{int64(-2)}, int64(2), ""},
		{"abs_wrong_type", "abs", []any{true}, nil, onlyNum},
		// bitand_float_error
		{"bitand_float_error", "bitand", []any{int64(3), int64(1)}, int64(1), ""},
		{"bitand_float_error", "bitand", []any{3.5, int64(1)}, nil, "Expect int type for the first operand but got 3.5"},
		// conv
		{"conv", "conv", []any{int64(255), int64(10), int64(2)}, "11111111", ""},
		{"conv", "conv", []any{"ff", int64(16), int64(10)}, "255", ""},
		{"conv", "conv", []any{int64(255), int64(10), int64(36)}, "73", ""},
		{"conv", "conv", []any{"1010", int64(2), int64(16)}, "A", ""},
		{"conv", "conv", []any{int64(0), int64(10), int64(2)}, "0", ""},
		{"conv", "conv", []any{"7FFFFFFF", int64(16), int64(10)}, "2147483647", ""},
		{"conv", "conv", []any{int64(0), int64(10), int64(36)}, "0", ""},
		{"conv", "conv", []any{"1", int64(2), int64(16)}, "1", ""},
		{"conv", "conv", []any{int64(35), int64(10), int64(2)}, "100011", ""},
		{"conv", "conv", []any{"10", int64(16), int64(10)}, "16", ""},
		{"conv", "conv", []any{int64(35), int64(10), int64(36)}, "Z", ""},
		{"conv", "conv", []any{"111111111", int64(2), int64(16)}, "1FF", ""},
		// floor_numeric_string
		{"floor_numeric_string", "floor", []any{"12"}, nil, "cannot convert string(12) to float64"},
		{"floor_numeric_string", "floor", []any{"-3.7"}, nil, "cannot convert string(-3.7) to float64"},
		// ln_log: log(b, x) takes the base first.
		{"ln_log", "ln", []any{int64(1)}, 0.0, ""},
		{"ln_log", "log", []any{int64(1)}, 0.0, ""},
		{"ln_log", "log", []any{int64(2), int64(1)}, 0.0, ""},
		{"ln_log", "log", []any{int64(3), int64(1)}, 0.0, ""},
		{"ln_log", "ln", []any{int64(100)}, 4.605170185988092, ""},
		{"ln_log", "log", []any{int64(100)}, 2.0, ""},
		{"ln_log", "log", []any{int64(2), int64(100)}, 6.643856189774725, ""},
		{"ln_log", "log", []any{int64(10), int64(100)}, 2.0, ""},
		{"ln_log", "ln", []any{0.5}, -0.6931471805599453, ""},
		{"ln_log", "log", []any{0.5}, -0.3010299956639812, ""},
		{"ln_log", "log", []any{int64(2), 0.5}, -1.0, ""},
		{"ln_log", "log", []any{int64(2), 0.5}, -1.0, ""},
		{"ln_log", "ln", []any{8.0}, 2.0794415416798357, ""},
		{"ln_log", "log", []any{8.0}, 0.9030899869919435, ""},
		{"ln_log", "log", []any{int64(2), 8.0}, 3.0, ""},
		{"ln_log", "log", []any{4.0, 8.0}, 1.5, ""},
		// math_nil: every function gives nil for a nil argument.
		{"math_nil", "abs", []any{nil}, nil, ""},
		{"math_nil", "sqrt", []any{nil}, nil, ""},
		{"math_nil", "round", []any{nil, int64(1)}, nil, ""},
		{"math_nil", "power", []any{nil, int64(2)}, nil, ""},
		{"math_nil", "bitand", []any{nil, int64(1)}, nil, ""},
		{"math_nil", "sin", []any{nil}, nil, ""},
		{"math_nil", "mod", []any{nil, int64(2)}, nil, ""},
		// mod_nested: mod(power(a, 2), 7), abs(floor(f) - ceil(f)).
		{"mod_nested", "mod", []any{25.0, int64(7)}, 4.0, ""},
		{"mod_nested", "abs", []any{1.0 - 2.0}, 1.0, ""},
		{"mod_nested", "mod", []any{16.0, int64(7)}, 2.0, ""},
		{"mod_nested", "abs", []any{-2.0 - -2.0}, 0.0, ""},
		// mod_power
		{"mod_power", "mod", []any{int64(7), int64(3)}, 1.0, ""},
		{"mod_power", "power", []any{int64(7), int64(3)}, 343.0, ""},
		{"mod_power", "pow", []any{int64(16), 0.5}, 4.0, ""},
		{"mod_power", "mod", []any{int64(-7), int64(3)}, -1.0, ""},
		{"mod_power", "power", []any{int64(-7), int64(3)}, -343.0, ""},
		{"mod_power", "pow", []any{int64(2), 0.5}, 1.4142135623730951, ""},
		{"mod_power", "mod", []any{7.5, int64(2)}, 1.5, ""},
		{"mod_power", "power", []any{7.5, int64(2)}, 56.25, ""},
		{"mod_power", "pow", []any{int64(0), 0.5}, 0.0, ""},
		{"mod_power", "mod", []any{int64(2), int64(-2)}, 0.0, ""},
		{"mod_power", "power", []any{int64(2), int64(-2)}, 0.25, ""},
		{"mod_power", "pow", []any{81.0, 0.5}, 9.0, ""},
		// power_numeric_string
		{"power_numeric_string", "power", []any{"3", int64(2)}, nil, "cannot convert string(3) to float64"},
		// radians_degrees_pi
		{"radians_degrees_pi", "radians", []any{int64(180)}, 3.141592653589793, ""},
		{"radians_degrees_pi", "degrees", []any{int64(1)}, 57.29577951308232, ""},
		{"radians_degrees_pi", "degrees", []any{3.141592653589793}, 180.0, ""},
		{"radians_degrees_pi", "pi", nil, 3.141592653589793, ""},
		{"radians_degrees_pi", "radians", []any{45.5}, 0.7941248096574199, ""},
		{"radians_degrees_pi", "degrees", []any{int64(0)}, 0.0, ""},
		{"radians_degrees_pi", "radians", []any{int64(-90)}, -1.5707963267948966, ""},
		// round: half away from zero on the binary value; always float.
		{"round", "round", []any{2.5}, 3.0, ""},
		{"round", "round", []any{2.5, int64(1)}, 2.5, ""},
		{"round", "round", []any{int64(3)}, 3.0, ""},
		{"round", "round", []any{2.5, int64(0)}, 3.0, ""},
		{"round", "round", []any{-2.5}, -3.0, ""},
		{"round", "round", []any{-2.5, int64(2)}, -2.5, ""},
		{"round", "round", []any{int64(-3)}, -3.0, ""},
		{"round", "round", []any{1.005}, 1.0, ""},
		{"round", "round", []any{1.005, int64(1)}, 1.0, ""},
		{"round", "round", []any{1.005, int64(2)}, 1.0, ""},
		{"round", "round", []any{int64(0)}, 0.0, ""},
		{"round", "round", []any{123.456}, 123.0, ""},
		{"round", "round", []any{123.456, int64(1)}, 123.5, ""},
		{"round", "round", []any{123.456, int64(2)}, 123.46, ""},
		{"round", "round", []any{int64(10)}, 10.0, ""},
		{"round", "round", []any{0.125}, 0.0, ""},
		{"round", "round", []any{0.125, int64(1)}, 0.1, ""},
		{"round", "round", []any{0.125, int64(2)}, 0.13, ""},
		{"round", "round", []any{int64(1)}, 1.0, ""},
		// round_numeric_string
		{"round_numeric_string", "round", []any{"-3.7"}, nil, "cannot convert string(-3.7) to float64"},
		// sign_sqrt_exp: sign is an integer.
		{"sign_sqrt_exp", "sign", []any{int64(7)}, int64(1), ""},
		{"sign_sqrt_exp", "sign", []any{2.5}, int64(1), ""},
		{"sign_sqrt_exp", "sqrt", []any{int64(7)}, 2.6457513110645907, ""},
		{"sign_sqrt_exp", "exp", []any{int64(0)}, 1.0, ""},
		{"sign_sqrt_exp", "exp", []any{int64(1)}, 2.718281828459045, ""},
		{"sign_sqrt_exp", "sign", []any{int64(-3)}, int64(-1), ""},
		{"sign_sqrt_exp", "sign", []any{-0.75}, int64(-1), ""},
		{"sign_sqrt_exp", "sqrt", []any{int64(3)}, 1.7320508075688772, ""},
		{"sign_sqrt_exp", "sign", []any{int64(0)}, int64(0), ""},
		{"sign_sqrt_exp", "sign", []any{0.0}, int64(0), ""},
		{"sign_sqrt_exp", "sqrt", []any{int64(0)}, 0.0, ""},
		{"sign_sqrt_exp", "sqrt", []any{int64(1024)}, 32.0, ""},
		// sqrt_wrong_type
		{"sqrt_wrong_type", "sqrt", []any{int64(16)}, 4.0, ""},
		{"sqrt_wrong_type", "sqrt", []any{"x"}, nil, "cannot convert string(x) to float64"},
		// trig
		{"trig", "sin", []any{int64(0)}, 0.0, ""},
		{"trig", "cos", []any{int64(0)}, 1.0, ""},
		{"trig", "tan", []any{int64(0)}, 0.0, ""},
		{"trig", "asin", []any{int64(0)}, 0.0, ""},
		{"trig", "acos", []any{int64(0)}, 1.5707963267948966, ""},
		{"trig", "atan", []any{int64(0)}, 0.0, ""},
		{"trig", "sin", []any{int64(1)}, 0.8414709848078965, ""},
		{"trig", "cos", []any{int64(1)}, 0.5403023058681398, ""},
		{"trig", "tan", []any{int64(1)}, 1.557407724654902, ""},
		{"trig", "asin", []any{0.5}, 0.5235987755982989, ""},
		{"trig", "acos", []any{0.5}, 1.0471975511965976, ""},
		{"trig", "atan", []any{0.5}, 0.4636476090008061, ""},
		{"trig", "sin", []any{-2.5}, -0.5984721441039564, ""},
		{"trig", "cos", []any{-2.5}, -0.8011436155469337, ""},
		{"trig", "tan", []any{-2.5}, 0.7470222972386603, ""},
		{"trig", "asin", []any{int64(-1)}, -1.5707963267948966, ""},
		{"trig", "acos", []any{int64(-1)}, 3.141592653589793, ""},
		{"trig", "atan", []any{int64(-1)}, -0.7853981633974483, ""},
		{"trig", "sin", []any{math.Pi}, 1.2246467991473515e-16, ""},
		{"trig", "cos", []any{math.Pi}, -1.0, ""},
		{"trig", "tan", []any{math.Pi}, -1.2246467991473515e-16, ""},
		{"trig", "asin", []any{int64(1)}, 1.5707963267948966, ""},
		{"trig", "acos", []any{int64(1)}, 0.0, ""},
		{"trig", "atan", []any{int64(1)}, 0.7853981633974483, ""},
		// agg_expression (gen_agg): round(avg(temp), 1).
		{"agg_expression", "round", []any{23.0}, 23.0, ""},
		{"agg_expression", "round", []any{21.5, int64(1)}, 21.5, ""},
	}
	mathRunCases(t, cases)
}

func TestMathBehaviour(t *testing.T) {
	cases := []mathCase{
		{"domain", "sqrt", []any{int64(-1)}, nil, "must be a positive number"},
		{"domain", "ln", []any{int64(0)}, nil, ""},
		{"domain", "ln", []any{-0.5}, nil, "must be a strictly positive number"},
		{"domain", "log", []any{int64(-5)}, nil, "must be a strictly positive number"},
		{"domain", "log", []any{int64(1), int64(8)}, nil, ""},
		{"domain", "acos", []any{int64(2)}, nil, ""},
		{"domain", "mod", []any{int64(5), int64(0)}, nil, ""},
		{"domain", "cot", []any{int64(0)}, nil, "out-of-range"},
		{"cot", "cot", []any{math.Pi / 4}, 1.0000000000000002, ""},
		{"atan2", "atan2", []any{int64(1), int64(1)}, 0.7853981633974483, ""},
		{"hyperbolic", "cosh", []any{int64(0)}, 1.0, ""},
		{"hyperbolic", "sinh", []any{int64(0)}, 0.0, ""},
		{"hyperbolic", "tanh", []any{int64(0)}, 0.0, ""},
		{"bits", "bitor", []any{int64(4), int64(1)}, int64(5), ""},
		{"bits", "bitxor", []any{int64(5), int64(1)}, int64(4), ""},
		{"bits", "bitnot", []any{int64(0)}, int64(-1), ""},
		{"bits", "bitnot", []any{1.5}, nil, "Expect int type for operand but got 1.5"},
		{"bits", "bitnot", []any{2.0}, int64(-3), ""},
		// diff_funcs/math_overflow: eKuiper answers +Inf, which no JSON sink writes.
		{"overflow", "cosh", []any{1e10}, nil, ""},
		{"overflow", "sinh", []any{-1e10}, nil, ""},
		{"overflow", "exp", []any{int64(1000)}, nil, ""},
		{"overflow", "power", []any{1e10, int64(400)}, nil, ""},
		{"overflow", "exp", []any{int64(1)}, math.E, ""},
		{"bits", "bitnot", []any{1e300}, nil, "Expect int type for operand but got 1e+300"},
		{"bits", "bitand", []any{2.0, int64(3)}, int64(2), ""},
		{"bits", "bitxor", []any{-4.0, 1.0}, int64(-3), ""},
		{"bits", "bitor", []any{"2", int64(1)}, nil, "Expect int type for the first operand"},
		{"bits", "bitor", []any{int64(1), "x"}, nil, "Expect int type for the second operand but got x"},
		{"abs", "abs", []any{int64(math.MinInt64)}, nil, "overflows"},
		{"round", "round", []any{1234.5, int64(-2)}, 1200.0, ""},
		{"round", "round", []any{1.5, 2.5}, nil, "second argument must be an integer"},
		{"round", "round", []any{1.25, int64(400)}, 1.25, ""},
		{"round", "round", []any{1e300, int64(20)}, 1e300, ""},
		{"conv", "conv", []any{"a", int64(16), int64(2)}, "1010", ""},
		{"conv", "conv", []any{"-17", int64(10), int64(-18)}, "-H", ""},
		{"conv", "conv", []any{"-17", int64(10), int64(18)}, "2D3FGB0B9CG4BD1H", ""},
		{"conv", "conv", []any{"  FF ", int64(16), int64(10)}, "255", ""},
		{"conv", "conv", []any{"random_str", int64(10), int64(8)}, "0", ""},
		{"conv", "conv", []any{"a6a", int64(1), int64(8)}, nil, ""},
		{"conv", "conv", []any{"18446744073709551615", int64(-10), int64(16)}, "7FFFFFFFFFFFFFFF", ""},
	}
	mathRunCases(t, cases)

	t.Run("rand", func(t *testing.T) {
		d, _ := Builtins().Lookup("rand")
		for range 100 {
			v, err := d.Scalar(mathTestEnv{}, nil)
			f, ok := v.(float64)
			if err != nil || !ok || f < 0 || f >= 1 {
				t.Fatalf("rand() = %#v, %v; want float64 in [0,1)", v, err)
			}
		}
	})
}

func TestMathValidate(t *testing.T) {
	str := &ast.StringLit{Val: "x"}
	i := &ast.IntegerLit{Val: 1}
	f := &ast.NumberLit{Val: 1.5}
	b := &ast.BoolLit{Val: true}
	field := &ast.FieldRef{Name: "x"}
	tests := []validateCase{
		{"abs", "abs", []ast.Expr{str}, true},
		{"abs", "abs", []ast.Expr{b}, true},
		{"abs", "abs", []ast.Expr{f}, false},
		{"abs", "abs", []ast.Expr{field}, false},
		{"sqrt", "sqrt", []ast.Expr{&ast.ParenExpr{X: str}}, true},
		{"bitand", "bitand", []ast.Expr{f, i}, true},
		{"bitand", "bitand", []ast.Expr{i, i}, false},
		{"bitnot", "bitnot", []ast.Expr{f}, true},
		{"round", "round", []ast.Expr{f, f}, true},
		{"round", "round", []ast.Expr{f, i}, false},
		{"conv", "conv", []ast.Expr{str, i, str}, true},
		{"conv", "conv", []ast.Expr{str, i, i}, false},
		{"log", "log", []ast.Expr{i, str}, true},
	}
	runValidateCases(t, tests)
}

func TestMathRegistration(t *testing.T) {
	reg := Builtins()
	names := []string{"abs", "ceiling", "ceil", "floor", "sign", "sqrt", "exp", "ln", "log", "acos", "asin",
		"atan", "atan2", "cos", "cosh", "sin", "sinh", "tan", "tanh", "cot", "radians", "degrees", "bitand",
		"bitor", "bitxor", "bitnot", "mod", "pi", "power", "pow", "rand", "round", "conv"}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			d, ok := reg.Lookup(n)
			if !ok || d.Kind != Scalar || d.Scalar == nil {
				t.Fatalf("%s: not registered as a scalar function", n)
			}
		})
	}
	ceil, _ := reg.Lookup("ceil")
	ceiling, _ := reg.Lookup("ceiling")
	if ceil != ceiling {
		t.Fatal("ceil is not an alias of ceiling")
	}
	if d, _ := reg.Lookup("log"); d.CheckArity(3) == nil || d.CheckArity(0) == nil {
		t.Fatal("log must take 1 or 2 arguments")
	}
}
