package function

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/number"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// stringValidateSubstring checks substring(s, start[, end]): integer
// indexes, start not negative and not after end when both are literals.
func stringValidateSubstring(args []ast.Expr) error {
	if err := mathValidateArgs(mathString, mathInt, mathInt)(args); err != nil {
		return err
	}
	start, ok := args[1].(*ast.IntegerLit)
	if !ok {
		return nil
	}
	if start.Val < 0 {
		return errors.New("the start index should not be a negative integer")
	}
	if len(args) == 3 {
		if end, ok := args[2].(*ast.IntegerLit); ok && end.Val < start.Val {
			return errors.New("the end index should be larger than start index")
		}
	}
	return nil
}

// stringSubstring implements substring(s, start[, end]): characters
// [start, end) of s. The third argument is an end index, as in eKuiper's code
// (its docs call it a length). Indexes past the end are clamped.
func stringSubstring(_ Env, args []any) (any, error) {
	if mathHasNil(args) {
		return nil, nil
	}
	r := []rune(textOf(args[0]))
	start, err := mathToInt(args[1])
	if err != nil {
		return nil, err
	}
	if start < 0 {
		return nil, errors.New("start index must be a positive number")
	}
	end := int64(len(r))
	if len(args) > 2 {
		if end, err = mathToInt(args[2]); err != nil {
			return nil, err
		}
		if end < 0 {
			return nil, errors.New("end index must be a positive number")
		}
		if start > end {
			return nil, errors.New("start index must be smaller than end index")
		}
		end = min(end, int64(len(r)))
	}
	if start >= int64(len(r)) {
		return "", nil
	}
	return string(r[start:end]), nil
}

func stringValidateSplit(args []ast.Expr) error {
	if err := mathValidateArgs(mathString, mathString, mathInt)(args); err != nil {
		return err
	}
	if idx, ok := args[2].(*ast.IntegerLit); ok && idx.Val < 0 {
		return errors.New("the index should not be a negative integer")
	}
	return nil
}

// stringSplitValue implements split_value(s, sep, idx): the idx-th (0-based)
// piece of s split by sep.
func stringSplitValue(_ Env, args []any) (any, error) {
	if mathHasNil(args) {
		return nil, nil
	}
	parts := strings.Split(textOf(args[0]), textOf(args[1]))
	idx, err := mathToInt(args[2])
	if err != nil {
		return nil, err
	}
	// A negative index counts from the end, as in eKuiper (a literal one
	// is refused when the rule is created; diff_funcs/split_value_negative).
	n := int64(len(parts))
	if idx >= n || idx < -n {
		return nil, fmt.Errorf("%d out of index array (size = %d)", idx, len(parts))
	}
	if idx < 0 {
		idx += n
	}
	return parts[idx], nil
}

// stringFormatMaxDecimals bounds format's decimal places, as MySQL does.
const stringFormatMaxDecimals = 30

// stringFormat implements format(x, d[, locale]): x rounded to d decimals,
// with thousands grouped the en_US way ("1,234.50") by default; another
// locale with a country (de_DE: "1.234,50") groups and marks decimals its
// own way, as eKuiper's does.
func stringFormat(_ Env, args []any) (any, error) {
	if mathHasNil(args) {
		return nil, nil
	}
	x, d, err := mathFloatAndInt(args, "format decimal places")
	if err != nil {
		return nil, err
	}
	d = max(0, min(d, stringFormatMaxDecimals))
	if len(args) > 2 {
		if loc := textOf(args[2]); loc != "en_US" {
			tag, err := language.Parse(loc)
			if _, _, region := tag.Raw(); err != nil || !region.IsCountry() {
				return nil, fmt.Errorf("format: locale %q is not supported (a language and a country, such as de_DE)", loc)
			}
			return message.NewPrinter(tag).Sprint(number.Decimal(x, number.Scale(int(d)))), nil
		}
	}
	return stringGroupThousands(strconv.FormatFloat(x, 'f', int(d), 64)), nil
}

// stringGroupThousands inserts commas every three digits in the integer part
// of a plain decimal number string.
func stringGroupThousands(num string) string {
	sign := ""
	if strings.HasPrefix(num, "-") {
		sign, num = "-", num[1:]
	}
	intPart, frac, hasFrac := strings.Cut(num, ".")
	if len(intPart) <= 3 || strings.ContainsAny(intPart, "IN") { // Inf, NaN
		return sign + num
	}
	var b strings.Builder
	b.WriteString(sign)
	head := len(intPart) % 3
	if head > 0 {
		b.WriteString(intPart[:head])
	}
	for i := head; i < len(intPart); i += 3 {
		if b.Len() > len(sign) {
			b.WriteByte(',')
		}
		b.WriteString(intPart[i : i+3])
	}
	if hasFrac {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}
