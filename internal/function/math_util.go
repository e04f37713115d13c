package function

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/token"
	"github.com/rekuiper/rekuiper/internal/value"
)

// mathLitKind is the static type of a literal argument, used by the
// rule-creation validators of the math, string, conversion and hash families.
// Non-literal expressions are mathLitNone: their type is only known at run time.
type mathLitKind int

const (
	mathLitNone mathLitKind = iota
	mathLitInt
	mathLitFloat
	mathLitString
	mathLitBool
)

// mathLitKindOf reports the literal kind of e, looking through parentheses and
// unary minus.
func mathLitKindOf(e ast.Expr) mathLitKind {
	switch x := e.(type) {
	case *ast.IntegerLit:
		return mathLitInt
	case *ast.NumberLit:
		return mathLitFloat
	case *ast.StringLit:
		return mathLitString
	case *ast.BoolLit:
		return mathLitBool
	case *ast.ParenExpr:
		return mathLitKindOf(x.X)
	case *ast.UnaryExpr:
		if x.Op == token.SUB {
			if k := mathLitKindOf(x.X); k == mathLitInt || k == mathLitFloat {
				return k
			}
		}
	}
	return mathLitNone
}

// mathArgRule is what a validator demands of one argument position.
type mathArgRule int

const (
	mathAny    mathArgRule = iota // no literal check
	mathNumber                    // int or float literal, or an expression
	mathInt                       // int literal, or an expression
	mathString                    // string literal, or an expression
)

func (r mathArgRule) accepts(k mathLitKind) bool {
	switch r {
	case mathNumber:
		return k != mathLitString && k != mathLitBool
	case mathInt:
		return k != mathLitString && k != mathLitBool && k != mathLitFloat
	case mathString:
		return k != mathLitInt && k != mathLitFloat && k != mathLitBool
	}
	return true
}

func (r mathArgRule) String() string {
	return [...]string{"any", "number", "int", "string"}[r]
}

// mathValidateArgs returns a Validate func that rejects literal arguments of
// the wrong type. rules[i] applies to argument i; when there are more
// arguments than rules, the last rule applies to the rest.
func mathValidateArgs(rules ...mathArgRule) func(args []ast.Expr) error {
	return func(args []ast.Expr) error {
		for i, a := range args {
			if len(rules) == 0 {
				return nil
			}
			r := rules[len(rules)-1]
			if i < len(rules) {
				r = rules[i]
			}
			if !r.accepts(mathLitKindOf(a)) {
				return fmt.Errorf("expect %s type for parameter %d", r, i+1)
			}
		}
		return nil
	}
}

// mathHasNil reports whether any argument is nil; most scalar functions then
// return nil.
func mathHasNil(args []any) bool {
	for _, a := range args {
		if a == nil {
			return true
		}
	}
	return false
}

// mathToFloat converts an int64 or float64 to float64. Other types (numeric
// strings and bools included) are errors, as in eKuiper.
func mathToFloat(v any) (float64, error) {
	switch x := v.(type) {
	case int64:
		return float64(x), nil
	case float64:
		return x, nil
	}
	return 0, fmt.Errorf("cannot convert %s to float64", value.Describe(v))
}

// mathToInt converts an int64, or a float64 without fractional part, to int64.
func mathToInt(v any) (int64, error) {
	n, ok, err := mathIntegral(v)
	if !ok {
		return 0, fmt.Errorf("cannot convert %s to int", value.Describe(v))
	}
	return n, err
}

// mathIntegral converts an int64, or a float64 without fractional part, to
// int64; ok is false for any other value, err is set for a float out of the
// int64 range.
func mathIntegral(v any) (n int64, ok bool, err error) {
	switch x := v.(type) {
	case int64:
		return x, true, nil
	case float64:
		if value.IsIntegral(x) {
			n, err := value.FloatToInt(x)
			return n, true, err
		}
	}
	return 0, false, nil
}

// mathFloatAndInt converts args[0] to float64 and args[1] to int64, the
// (number, digits) pair of trunc and format; intErr says what the second
// argument is in its conversion error.
func mathFloatAndInt(args []any, intErr string) (float64, int64, error) {
	x, err := mathToFloat(args[0])
	if err != nil {
		return 0, 0, err
	}
	d, err := mathToInt(args[1])
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", intErr, err)
	}
	return x, d, nil
}

// mathFloatResult maps NaN (a domain error) and an infinity (an overflow:
// cosh(1e10), power(10, 400)) to nil, which a JSON sink can write.
func mathFloatResult(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return f
}

// mathUnary builds a one-argument float function: nil in, nil out; NaN or
// an infinity out, nil out.
func mathUnary(name string, f func(float64) float64) *Def {
	return &Def{
		Name: name, Kind: Scalar, MinArgs: 1, MaxArgs: 1,
		Validate: mathValidateArgs(mathNumber),
		Scalar: func(_ Env, args []any) (any, error) {
			if args[0] == nil {
				return nil, nil
			}
			x, err := mathToFloat(args[0])
			if err != nil {
				return nil, err
			}
			return mathFloatResult(f(x)), nil
		},
	}
}

// mathDomain makes d, a unary float function, refuse a negative argument
// with the error format (one %v for the argument).
func mathDomain(d *Def, format string) *Def {
	f := d.Scalar
	d.Scalar = func(env Env, args []any) (any, error) {
		if args[0] != nil {
			if x, err := mathToFloat(args[0]); err == nil && x < 0 {
				return nil, fmt.Errorf(format, x)
			}
		}
		return f(env, args)
	}
	return d
}

// mathRound rounds v to prec decimal places, half away from zero, working on
// the binary value (round(1.005, 2) is 1.0 because 1.005 is below 1.005 in
// binary).
func mathRound(v float64, prec int64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	if prec > 330 {
		return v // every float64 is exact at this many decimals
	}
	if prec < -330 {
		return math.Copysign(0, v)
	}
	factor := math.Pow(10, float64(prec))
	scaled := v * factor
	if math.IsInf(scaled, 0) {
		return v // v has no digits beyond prec: it is already "rounded"
	}
	return math.Round(scaled) / factor
}

// mathBaseDigits returns the longest prefix of s (after an optional sign)
// made of digits valid in base, with the sign kept when it is '-'.
func mathBaseDigits(s string, base int) (digits string, negative bool) {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		negative = s[0] == '-'
		s = s[1:]
	}
	n := 0
	for n < len(s) {
		d, ok := mathDigitValue(s[n])
		if !ok || d >= base {
			break
		}
		n++
	}
	return s[:n], negative
}

func mathDigitValue(c byte) (int, bool) {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0'), true
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10, true
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10, true
	}
	return 0, false
}

// mathConv converts the number written in s from one base to another with
// MySQL CONV semantics: bases are 2..36 in absolute value; a negative
// fromBase reads s as signed, a negative toBase writes a signed result (else
// negative numbers show as 64-bit two's complement). Invalid digits end the
// number; no digits at all gives "0". ok is false when a base is out of range.
func mathConv(s string, fromBase, toBase int64) (res string, ok bool) {
	signedIn, signedOut := fromBase < 0, toBase < 0
	if signedIn {
		fromBase = -fromBase
	}
	if signedOut {
		toBase = -toBase
	}
	if fromBase < 2 || fromBase > 36 || toBase < 2 || toBase > 36 {
		return "", false
	}
	digits, negative := mathBaseDigits(strings.TrimSpace(s), int(fromBase))
	if digits == "" {
		return "0", true
	}
	u, err := strconv.ParseUint(digits, int(fromBase), 64)
	if err != nil {
		u = math.MaxUint64 // out of range: saturate like MySQL
	}
	if signedIn {
		if negative && u > 1<<63 {
			u = 1 << 63
		}
		if !negative && u > math.MaxInt64 {
			u = math.MaxInt64
		}
	}
	if negative {
		u = -u
	}
	prefix := ""
	if signedOut && int64(u) < 0 {
		u = -u
		prefix = "-"
	}
	return prefix + strings.ToUpper(strconv.FormatUint(u, int(toBase))), true
}
