package function

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rekuiper/rekuiper/internal/value"
)

// registerString adds the string functions. Non-string arguments are
// converted with textOf. Nil handling follows eKuiper per function:
// concat skips nil arguments; startswith, endswith and regexp_matches give
// false; indexof gives -1; length and numbytes give 0; the others give nil.
// Indexes (indexof, substring) count characters (runes), not bytes.
func registerString(r *Registry) {
	r.MustAdd(
		&Def{
			Name: "concat", Kind: Scalar, MinArgs: 1, MaxArgs: -1,
			Validate: mathValidateArgs(mathString),
			Scalar: func(_ Env, args []any) (any, error) {
				var b strings.Builder
				for _, a := range args {
					b.WriteString(textOf(a))
				}
				return b.String(), nil
			},
		},
		stringPredicate("startswith", strings.HasPrefix),
		stringPredicate("endswith", strings.HasSuffix),
		&Def{
			Name: "indexof", Kind: Scalar, MinArgs: 2, MaxArgs: 2,
			Validate: mathValidateArgs(mathString, mathString),
			Scalar: func(_ Env, args []any) (any, error) {
				if mathHasNil(args) {
					return int64(-1), nil
				}
				s, sub := textOf(args[0]), textOf(args[1])
				i := strings.Index(s, sub)
				if i < 0 {
					return int64(-1), nil
				}
				return int64(utf8.RuneCountInString(s[:i])), nil
			},
		},
		&Def{
			Name: "length", Kind: Scalar, MinArgs: 1, MaxArgs: 1,
			Scalar: func(_ Env, args []any) (any, error) {
				switch v := args[0].(type) {
				case nil:
					return int64(0), nil
				case []any:
					return int64(len(v)), nil
				case map[string]any:
					return int64(len(v)), nil
				case []byte:
					return int64(len(v)), nil
				}
				return int64(utf8.RuneCountInString(textOf(args[0]))), nil
			},
		},
		&Def{
			Name: "numbytes", Kind: Scalar, MinArgs: 1, MaxArgs: 1,
			Validate: mathValidateArgs(mathString),
			Scalar: func(_ Env, args []any) (any, error) {
				if b, ok := args[0].([]byte); ok {
					return int64(len(b)), nil
				}
				return int64(len(textOf(args[0]))), nil
			},
		},
		stringMap("lower", strings.ToLower),
		stringMap("upper", strings.ToUpper),
		stringMap("trim", strings.TrimSpace),
		stringMap("ltrim", func(s string) string { return strings.TrimLeftFunc(s, unicode.IsSpace) }),
		stringMap("rtrim", func(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) }),
		stringMap("reverse", stringReverse),
		stringPad("lpad", func(s, pad string) string { return pad + s }),
		stringPad("rpad", func(s, pad string) string { return s + pad }),
		stringPredicate("regexp_matches", nil),
		&Def{
			Name: "regexp_replace", Kind: Scalar, MinArgs: 3, MaxArgs: 3,
			Validate: mathValidateArgs(mathString, mathString, mathString),
			Scalar: stringWithRegexp(func(re *regexp.Regexp, args []any) any {
				return re.ReplaceAllString(textOf(args[0]), textOf(args[2]))
			}),
		},
		&Def{
			Name: "regexp_substr", Aliases: []string{"regexp_substring"},
			Kind: Scalar, MinArgs: 2, MaxArgs: 2,
			Validate: mathValidateArgs(mathString, mathString),
			Scalar: stringWithRegexp(func(re *regexp.Regexp, args []any) any {
				return re.FindString(textOf(args[0]))
			}),
		},
		&Def{
			Name: "substring", Kind: Scalar, MinArgs: 2, MaxArgs: 3,
			Validate: stringValidateSubstring,
			Scalar:   stringSubstring,
		},
		&Def{
			Name: "split_value", Kind: Scalar, MinArgs: 3, MaxArgs: 3,
			Validate: stringValidateSplit,
			Scalar:   stringSplitValue,
		},
		&Def{
			Name: "format", Kind: Scalar, MinArgs: 2, MaxArgs: 3,
			Validate: mathValidateArgs(mathNumber, mathInt, mathString),
			Scalar:   stringFormat,
		},
	)
}

// stringMap builds a one-argument string-to-string function (nil gives nil).
func stringMap(name string, f func(string) string) *Def {
	return &Def{
		Name: name, Kind: Scalar, MinArgs: 1, MaxArgs: 1,
		Validate: mathValidateArgs(mathString),
		Scalar: func(_ Env, args []any) (any, error) {
			if args[0] == nil {
				return nil, nil
			}
			return f(textOf(args[0])), nil
		},
	}
}

// stringWithRegexp builds a regular expression function whose pattern is
// args[1]: nil when any argument is nil, otherwise f of the compiled pattern.
func stringWithRegexp(f func(re *regexp.Regexp, args []any) any) ScalarFunc {
	return func(_ Env, args []any) (any, error) {
		if mathHasNil(args) {
			return nil, nil
		}
		re, err := stringCompile(args[1])
		if err != nil {
			return nil, err
		}
		return f(re, args), nil
	}
}

// stringPredicate builds a two-string boolean function that is false when
// either argument is nil. A nil f means a regular expression match.
func stringPredicate(name string, f func(s, t string) bool) *Def {
	return &Def{
		Name: name, Kind: Scalar, MinArgs: 2, MaxArgs: 2,
		Validate: mathValidateArgs(mathString, mathString),
		Scalar: func(_ Env, args []any) (any, error) {
			if mathHasNil(args) {
				return false, nil
			}
			if f != nil {
				return f(textOf(args[0]), textOf(args[1])), nil
			}
			re, err := stringCompile(args[1])
			if err != nil {
				return nil, err
			}
			return re.MatchString(textOf(args[0])), nil
		},
	}
}

// stringPad builds lpad/rpad: (s, n) adds n spaces, at most MaxPadLength.
func stringPad(name string, join func(s, pad string) string) *Def {
	return &Def{
		Name: name, Kind: Scalar, MinArgs: 2, MaxArgs: 2,
		Validate: boundedArg(mathValidateArgs(mathString, mathInt), name, "padding length", 1, MaxPadLength),
		Scalar: func(_ Env, args []any) (any, error) {
			if mathHasNil(args) {
				return nil, nil
			}
			n, err := mathToInt(args[1])
			if err != nil {
				return nil, err
			}
			if n < 0 {
				return nil, fmt.Errorf("the padding length must not be negative, got %d", n)
			}
			if n > MaxPadLength {
				return nil, boundError(name, "padding length", n, MaxPadLength)
			}
			return join(textOf(args[0]), strings.Repeat(" ", int(n))), nil
		},
	}
}

func stringReverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

func stringCompile(pattern any) (*regexp.Regexp, error) {
	p := textOf(pattern)
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("compile regular expression %q: %w", p, err)
	}
	return re, nil
}

// textOf is a value as the string functions (and hashes) read it, as
// eKuiper's do (Go's %v): a float in its shortest form, with an exponent
// when it is below 1e-4 or has more integer digits than significant ones
// (10000000000.0 is "1e+10", so its length is 5; 123456789.0 is
// "1.23456789e+08"; 100000.5 stays "100000.5"); anything else as
// value.ToString. cast(x, "string") keeps the plain decimal form, as
// eKuiper's cast does.
func textOf(v any) string {
	if f, ok := v.(float64); ok {
		return fmt.Sprint(f)
	}
	return value.ToString(v)
}
