package function

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // convert_tz must work on hosts without a zoneinfo database
	"unicode/utf8"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/value"
)

// convCastTypes lists the target type names cast accepts.
const convCastTypes = "bigint, float, string, boolean, datetime, bytea"

// registerConv adds the conversion and transform functions. A nil argument
// gives nil for all of them.
func registerConv(r *Registry) {
	r.MustAdd(
		&Def{
			Name: "cast", Kind: Scalar, MinArgs: 2, MaxArgs: 2,
			Validate: convValidateCast,
			Scalar:   convCast,
		},
		&Def{
			Name: "convert_tz", Kind: Scalar, MinArgs: 2, MaxArgs: 2,
			Validate: convValidateTZ,
			Scalar:   convConvertTZ,
		},
		&Def{
			Name: "to_seconds", Kind: Scalar, MinArgs: 1, MaxArgs: 1,
			Scalar: func(env Env, args []any) (any, error) {
				if args[0] == nil {
					return nil, nil
				}
				t, err := value.ToTime(args[0], convLocation(env))
				if err != nil {
					return nil, err
				}
				return t.Unix(), nil
			},
		},
		&Def{
			Name: "encode", Kind: Scalar, MinArgs: 2, MaxArgs: 2,
			Validate: convValidateBase64,
			Scalar:   convEncode,
		},
		&Def{
			Name: "decode", Kind: Scalar, MinArgs: 2, MaxArgs: 2,
			Validate: convValidateBase64,
			Scalar:   convDecode,
		},
		&Def{
			Name: "compress", Kind: Scalar, MinArgs: 2, MaxArgs: 2,
			Validate: convValidateCompression,
			Scalar:   convCompress,
		},
		&Def{
			Name: "decompress", Kind: Scalar, MinArgs: 2, MaxArgs: 2,
			Validate: convValidateCompression,
			Scalar:   convDecompress,
		},
		&Def{
			Name: "trunc", Kind: Scalar, MinArgs: 2, MaxArgs: 2,
			Validate: mathValidateArgs(mathNumber, mathInt),
			Scalar:   convTruncFunc,
		},
		&Def{
			Name: "chr", Kind: Scalar, MinArgs: 1, MaxArgs: 1,
			Validate: mathValidateArgs(mathInt),
			Scalar:   convChr,
		},
		&Def{
			Name: "hex2dec", Kind: Scalar, MinArgs: 1, MaxArgs: 1,
			Validate: mathValidateArgs(mathString),
			Scalar:   convHex2Dec,
		},
		&Def{
			Name: "dec2hex", Kind: Scalar, MinArgs: 1, MaxArgs: 1,
			Validate: mathValidateArgs(mathInt),
			Scalar:   convDec2Hex,
		},
	)
}

// convLocation is the configured zone, UTC when the engine gives none.
func convLocation(env Env) *time.Location {
	if env != nil {
		if loc := env.Location(); loc != nil {
			return loc
		}
	}
	return time.UTC
}

func convValidateCast(args []ast.Expr) error {
	if err := mathValidateArgs(mathAny, mathString)(args); err != nil {
		return err
	}
	if lit, ok := args[1].(*ast.StringLit); ok && !convIsCastType(lit.Val) {
		return fmt.Errorf("expect one of following value for the 2nd parameter: %s", convCastTypes)
	}
	return nil
}

func convIsCastType(s string) bool {
	switch s {
	case "bigint", "float", "string", "boolean", "datetime", "bytea":
		return true
	}
	return false
}

// convCast implements cast(v, type). Datetimes cast to string use the
// default datetime layout and arrays/objects cast to string are JSON (eKuiper
// uses Go's fmt syntax for both).
func convCast(env Env, args []any) (any, error) {
	if mathHasNil(args) {
		return nil, nil
	}
	v := args[0]
	switch t, _ := args[1].(string); t {
	case "bigint":
		if tm, ok := v.(time.Time); ok {
			return tm.UnixMilli(), nil
		}
		return value.ToInt(v)
	case "float":
		if tm, ok := v.(time.Time); ok {
			return float64(tm.UnixMilli()), nil
		}
		return value.ToFloat(v)
	case "string":
		return value.ToString(v), nil
	case "boolean":
		return value.ToBool(v)
	case "datetime":
		return value.ToTime(v, convLocation(env))
	case "bytea":
		switch x := v.(type) {
		case []byte:
			return x, nil
		case string:
			// eKuiper reads a string that is valid standard base64 as
			// encoded bytes, and any other string as its UTF-8 bytes.
			if b, err := base64.StdEncoding.DecodeString(x); err == nil {
				return b, nil
			}
			return []byte(x), nil
		}
		return nil, fmt.Errorf("cannot convert %s to bytea", value.Describe(v))
	}
	return nil, fmt.Errorf("unknown cast type %s, expect one of %s", value.Describe(args[1]), convCastTypes)
}

func convValidateTZ(args []ast.Expr) error {
	if err := mathValidateArgs(mathAny, mathString)(args); err != nil {
		return err
	}
	if lit, ok := args[1].(*ast.StringLit); ok && lit.Val != "Local" {
		if _, err := time.LoadLocation(lit.Val); err != nil {
			return fmt.Errorf("convert_tz time zone: %w", err)
		}
	}
	return nil
}

// convConvertTZ implements convert_tz(t, zone): the same instant shown in an
// IANA zone; "Local" is the engine's configured zone.
func convConvertTZ(env Env, args []any) (any, error) {
	if mathHasNil(args) {
		return nil, nil
	}
	t, err := value.ToTime(args[0], convLocation(env))
	if err != nil {
		return nil, err
	}
	name, ok := args[1].(string)
	if !ok {
		return nil, fmt.Errorf("expect a time zone name but got %s", value.Describe(args[1]))
	}
	loc := convLocation(env)
	if name != "Local" {
		if loc, err = time.LoadLocation(name); err != nil {
			return nil, fmt.Errorf("convert_tz time zone: %w", err)
		}
	}
	return t.In(loc), nil
}

func convValidateBase64(args []ast.Expr) error {
	if err := mathValidateArgs(mathString, mathString)(args); err != nil {
		return err
	}
	if lit, ok := args[1].(*ast.StringLit); ok && !strings.EqualFold(lit.Val, "base64") {
		return errors.New("only base64 is supported for the 2nd parameter")
	}
	return nil
}

// The encode/decode run-time messages are eKuiper's, verbatim.

func convEncode(_ Env, args []any) (any, error) {
	if mathHasNil(args) {
		return nil, nil
	}
	if m, _ := args[1].(string); !strings.EqualFold(m, "base64") {
		return nil, errors.New("Only base64 encoding is supported.")
	}
	switch v := args[0].(type) {
	case string:
		return base64.StdEncoding.EncodeToString([]byte(v)), nil
	case []byte:
		return base64.StdEncoding.EncodeToString(v), nil
	}
	return nil, errors.New("Only string type can be encoded.")
}

func convDecode(_ Env, args []any) (any, error) {
	if mathHasNil(args) {
		return nil, nil
	}
	if m, _ := args[1].(string); !strings.EqualFold(m, "base64") {
		return nil, errors.New("Only base64 decoding is supported.")
	}
	s, ok := args[0].(string)
	if !ok {
		return nil, errors.New("Only string type can be decoded.")
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("fail to decode base64 string: %w", err)
	}
	return b, nil
}

func convTruncFunc(_ Env, args []any) (any, error) {
	if mathHasNil(args) {
		return nil, nil
	}
	x, d, err := mathFloatAndInt(args, "the 2nd parameter must be int value")
	if err != nil {
		return nil, err
	}
	return convTrunc(x, d), nil
}

// convTrunc cuts x to d decimal places toward zero (d < 0 cuts integer
// digits). It works on the shortest decimal spelling of x, so trunc(0.29, 2)
// is 0.29, not 0.28 as float scaling would give.
func convTrunc(x float64, d int64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	if d < 0 {
		if d < -308 {
			return math.Copysign(0, x)
		}
		p := math.Pow(10, float64(-d))
		return math.Trunc(x/p) * p
	}
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if dot := strings.IndexByte(s, '.'); dot >= 0 && int64(len(s)-dot-1) > d {
		if d == 0 {
			s = s[:dot]
		} else {
			s = s[:dot+1+int(d)]
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return x
	}
	return f
}

// convChr implements chr(code): the one-character string for a Unicode code
// point. A one-character string is returned unchanged.
func convChr(_ Env, args []any) (any, error) {
	switch v := args[0].(type) {
	case nil:
		return nil, nil
	case string:
		if utf8.RuneCountInString(v) != 1 {
			return nil, fmt.Errorf("chr expects a single character but got %q", v)
		}
		return v, nil
	case int64, float64:
		n, err := mathToInt(v)
		if err != nil {
			return nil, err
		}
		if n < 0 || n > utf8.MaxRune || !utf8.ValidRune(rune(n)) {
			return nil, fmt.Errorf("chr: %d is not a valid code point", n)
		}
		return string(rune(n)), nil
	}
	return nil, fmt.Errorf("only bigint, float and string type can be converted to a character, got %s", value.Describe(args[0]))
}

// convHex2Dec implements hex2dec(s): s is hexadecimal with an optional sign
// and 0x prefix; the result must fit a signed 64-bit integer.
func convHex2Dec(_ Env, args []any) (any, error) {
	if args[0] == nil {
		return nil, nil
	}
	s, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("hex2dec expects a string but got %s", value.Describe(args[0]))
	}
	s = strings.TrimSpace(s)
	sign := ""
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		sign, s = s[:1], s[1:]
	}
	digits := s
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		digits = s[2:]
	}
	n, err := strconv.ParseInt(sign+digits, 16, 64)
	if err != nil || digits == "" || digits[0] == '+' || digits[0] == '-' {
		return nil, fmt.Errorf("invalid hexadecimal value: %s", digits)
	}
	return n, nil
}

// convDec2Hex implements dec2hex(n): "0x" and lower-case hex digits; a
// negative number is written "-0x..." (sign and magnitude).
func convDec2Hex(_ Env, args []any) (any, error) {
	if args[0] == nil {
		return nil, nil
	}
	n, err := mathToInt(args[0])
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return "-0x" + strconv.FormatUint(uint64(-n), 16), nil
	}
	return "0x" + strconv.FormatInt(n, 16), nil
}
