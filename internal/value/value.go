// Package value defines the runtime values of rekuiper SQL and the coercion,
// comparison and arithmetic rules between them (eKuiper v2 semantics).
//
// A value is one of these Go types, and nothing else:
//
//	nil                 SQL null / absent
//	int64               BIGINT
//	float64             FLOAT
//	string              STRING
//	bool                BOOLEAN
//	[]byte              BYTEA
//	time.Time           DATETIME
//	[]any               ARRAY
//	map[string]any      STRUCT / object
//
// Decoders and functions must normalise to these types (no int, float32,
// json.Number); Normalize does it for values coming from outside.
package value

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// TypeName returns eKuiper's Go-flavoured type name of v as used in error
// messages: "int64", "float64", "string", "bool", "[]uint8", "time.Time",
// "[]interface {}", "map[string]interface {}", "<nil>".
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "<nil>"
	case int64:
		return "int64"
	case float64:
		return "float64"
	case string:
		return "string"
	case bool:
		return "bool"
	case []byte:
		return "[]uint8"
	case time.Time:
		return "time.Time"
	case []any:
		return "[]interface {}"
	case map[string]any:
		return "map[string]interface {}"
	}
	return fmt.Sprintf("%T", v)
}

// Describe formats v the way eKuiper's errors do: `int64(1)`, `string(3)`.
func Describe(v any) string {
	return fmt.Sprintf("%s(%v)", TypeName(v), v)
}

// Normalize converts Go values from decoders and extensions to the value
// model: all integer kinds to int64, float32 to float64, json.Number to int64
// or float64, []map[string]any and []string to []any, recursively.
func Normalize(v any) any {
	switch x := v.(type) {
	case nil, int64, float64, string, bool, []byte, time.Time:
		return v
	case int:
		return int64(x)
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case uint:
		if uint64(x) > math.MaxInt64 {
			return float64(x)
		}
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		if x > math.MaxInt64 {
			// does not fit in bigint: promoted to float, as json.Number is
			return float64(x)
		}
		return int64(x)
	case float32:
		return float64(x)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i, e := range x {
			x[i] = Normalize(e)
		}
		return x
	case map[string]any:
		for k, e := range x {
			x[k] = Normalize(e)
		}
		return x
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Normalize(e)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	case []int64:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	case []float64:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	}
	return v
}

// ToInt converts a number, numeric string or bool to int64 (floats truncate).
func ToInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case float64:
		return FloatToInt(x)
	case string:
		if i, err := strconv.ParseInt(x, 10, 64); err == nil {
			return i, nil
		}
		if f, err := strconv.ParseFloat(x, 64); err == nil {
			return FloatToInt(f)
		}
		return 0, fmt.Errorf("cannot convert string(%s) to int64", x)
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("cannot convert %s to int64", Describe(v))
}

// FloatToInt truncates f toward zero; NaN, infinities and values outside
// the bigint range are an ErrOverflow error (Go's conversion would give an
// arbitrary number).
func FloatToInt(f float64) (int64, error) {
	// -2^63 is exact in float64; 2^63 is the first value above MaxInt64.
	if f != f || f < -9223372036854775808.0 || f >= 9223372036854775808.0 {
		return 0, fmt.Errorf("%w: float64(%v) does not fit in bigint", ErrOverflow, f)
	}
	return int64(f), nil
}

// ToFloat converts a number or numeric string to float64.
func ToFloat(v any) (float64, error) {
	switch x := v.(type) {
	case int64:
		return float64(x), nil
	case float64:
		return x, nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return 0, fmt.Errorf("cannot convert string(%s) to float64", x)
		}
		return f, nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("cannot convert %s to float64", Describe(v))
}

// ToString converts a value to its string form: numbers in shortest form,
// bytes as raw string, datetimes in eKuiper's default layout, arrays and
// objects as JSON.
func ToString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case []byte:
		return string(x)
	case time.Time:
		return x.Format(DefaultTimeLayout)
	case []any, map[string]any:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
	return fmt.Sprint(v)
}

// JSONTimeLayout is how sinks write datetimes in JSON (and how the
// conformance corpus records them): "2023-11-14 22:13:20", with a fraction
// only when it is not zero.
const JSONTimeLayout = "2006-01-02 15:04:05.999999999"

// DefaultTimeLayout is eKuiper's default datetime string layout.
const DefaultTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// ToBool converts bool, "true"/"false" strings and numbers (non-zero) to bool.
func ToBool(v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		b, err := strconv.ParseBool(x)
		if err != nil {
			return false, fmt.Errorf("cannot convert string(%s) to bool", x)
		}
		return b, nil
	case int64:
		return x != 0, nil
	case float64:
		return x != 0, nil
	}
	return false, fmt.Errorf("cannot convert %s to bool", Describe(v))
}

// ToTime converts a datetime, epoch milliseconds (int or float) or a string to
// time.Time. Strings are read as eKuiper reads them: the default layout, RFC
// 3339, or one of the lenient forms of timeLayouts ("2023-11-14 22:13",
// "2023/11/14", "2023.11.14", "11/14/2023", "20231114", ...); forms without
// a date (a bare time of day) are refused, as their value would depend on
// the day they are read.
func ToTime(v any, loc *time.Location) (time.Time, error) {
	if loc == nil {
		loc = time.UTC
	}
	switch x := v.(type) {
	case time.Time:
		return x, nil
	case int64:
		return time.UnixMilli(x).In(loc), nil
	case float64:
		return time.UnixMilli(int64(x)).In(loc), nil
	case string:
		for _, layout := range timeLayouts {
			if t, err := time.ParseInLocation(layout, x, loc); err == nil {
				return t, nil
			}
		}
		return time.Time{}, fmt.Errorf("cannot convert string(%s) to datetime", x)
	}
	return time.Time{}, fmt.Errorf("cannot convert %s to datetime", Describe(v))
}

// timeLayouts are the string forms ToTime reads, in order: the default
// layout, RFC 3339, then the dated layouts of the lenient parser eKuiper
// uses (github.com/jinzhu/now's list).
var timeLayouts = []string{
	DefaultTimeLayout, time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02",
	"2006", "2006-1", "2006-1-2", "2006-1-2 15", "2006-1-2 15:4", "2006-1-2 15:4:5",
	"2006-01-02 15:04:05.999999999 -0700 MST", "2006-01-02T15:04:05", "2006.1.2", "2006.1.2 15:04:05",
	"2006.01.02", "2006.01.02 15:04:05", "2006.01.02 15:04:05.999999999", "1/2/2006", "1/2/2006 15:4:5",
	"2006/01/02", "20060102", "2006/01/02 15:04:05", time.ANSIC, time.UnixDate, time.RubyDate,
	time.RFC822, time.RFC822Z, time.RFC850, time.RFC1123, time.RFC1123Z,
}

// IsNumber reports whether v is int64 or float64.
func IsNumber(v any) bool {
	switch v.(type) {
	case int64, float64:
		return true
	}
	return false
}

// IsIntegral reports whether f has no fractional part and fits in int64.
func IsIntegral(f float64) bool {
	return f == math.Trunc(f) && f >= math.MinInt64 && f <= math.MaxInt64
}
