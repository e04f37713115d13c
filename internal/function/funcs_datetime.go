package function

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/value"
)

// registerDatetime adds the date and time functions. The current time is
// always env.Now() in env.Location(). Datetime arguments may be datetimes,
// epoch milliseconds or strings (see value.ToTime); a nil argument gives nil
// (eKuiper raises "unsupported type to convert to timestamp <nil>").
//
// Result types: now and its aliases, date_calc and from_unix_time give
// time.Time; cur_date, from_days and last_day give "YYYY-MM-DD" strings and
// cur_time an "HH:mm:ss[.f]" string; the part functions give int64.
func registerDatetime(r *Registry) {
	r.MustAdd(
		&Def{Name: "now", Aliases: []string{"current_timestamp", "local_time", "local_timestamp"},
			Kind: Scalar, MinArgs: 0, MaxArgs: 1, Validate: datetimeValidateFsp, Scalar: datetimeNow, ReadsClock: true},
		&Def{Name: "cur_date", Aliases: []string{"current_date"}, Kind: Scalar, MinArgs: 0, MaxArgs: 0, Scalar: datetimeCurDate, ReadsClock: true},
		&Def{Name: "cur_time", Aliases: []string{"current_time"}, Kind: Scalar, MinArgs: 0, MaxArgs: 1,
			Validate: datetimeValidateFsp, Scalar: datetimeCurTime, ReadsClock: true},
		&Def{Name: "format_time", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: datetimeFormatTime},
		&Def{Name: "date_calc", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: datetimeCalc},
		&Def{Name: "date_diff", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: datetimeDiff},
		datetimePart("day_name", nil, func(t time.Time) any { return t.Weekday().String() }),
		datetimePart("month_name", nil, func(t time.Time) any { return t.Month().String() }),
		datetimePart("day_of_month", []string{"day"}, func(t time.Time) any { return int64(t.Day()) }),
		datetimePart("day_of_week", nil, func(t time.Time) any { return int64(t.Weekday()) }),
		datetimePart("day_of_year", nil, func(t time.Time) any { return int64(t.YearDay()) }),
		datetimePart("hour", nil, func(t time.Time) any { return int64(t.Hour()) }),
		datetimePart("minute", nil, func(t time.Time) any { return int64(t.Minute()) }),
		datetimePart("second", nil, func(t time.Time) any { return int64(t.Second()) }),
		datetimePart("microsecond", nil, func(t time.Time) any { return int64(t.Nanosecond() / 1000) }),
		datetimePart("month", nil, func(t time.Time) any { return int64(t.Month()) }),
		datetimePart("last_day", nil, func(t time.Time) any {
			y, m, _ := t.Date()
			return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
		}),
		&Def{Name: "from_days", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: datetimeFromDays},
		&Def{Name: "from_unix_time", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: datetimeFromUnix},
	)
}

// datetimeValidateFsp checks the optional fractional-seconds precision: an
// integer literal from 0 to 6 (or any non-literal expression).
func datetimeValidateFsp(args []ast.Expr) error {
	if len(args) == 0 {
		return nil
	}
	switch x := args[0].(type) {
	case *ast.IntegerLit:
		if x.Val < 0 || x.Val > 6 {
			return fmt.Errorf("the fractional seconds precision should be 0 to 6, got %d", x.Val)
		}
	case *ast.NumberLit, *ast.StringLit, *ast.BoolLit:
		return fmt.Errorf("expect int type for parameter 1")
	}
	return nil
}

// datetimeFsp reads the optional precision argument (default 0).
func datetimeFsp(args []any) (int, error) {
	if len(args) == 0 || args[0] == nil {
		return 0, nil
	}
	n, ok := args[0].(int64)
	if !ok || n < 0 || n > 6 {
		return 0, fmt.Errorf("the fractional seconds precision should be an integer from 0 to 6, got %s", value.Describe(args[0]))
	}
	return int(n), nil
}

// datetimeCurrent is env.Now() in env.Location(), truncated to fsp digits.
func datetimeCurrent(env Env, fsp int) time.Time {
	unit := time.Second
	for range fsp {
		unit /= 10
	}
	t := env.Now().Truncate(unit)
	if loc := env.Location(); loc != nil {
		t = t.In(loc)
	}
	return t
}

// datetimeNow is the current datetime truncated to the fsp (0-6) fractional
// digits.
func datetimeNow(env Env, args []any) (any, error) {
	fsp, err := datetimeFsp(args)
	if err != nil {
		return nil, err
	}
	return datetimeCurrent(env, fsp), nil
}

func datetimeCurDate(env Env, _ []any) (any, error) {
	return datetimeCurrent(env, 0).Format(time.DateOnly), nil
}

// datetimeCurTime is the current time of day "HH:mm:ss" with fsp fractional
// digits.
func datetimeCurTime(env Env, args []any) (any, error) {
	fsp, err := datetimeFsp(args)
	if err != nil {
		return nil, err
	}
	layout := "15:04:05"
	if fsp > 0 {
		layout += "." + strings.Repeat("0", fsp)
	}
	return datetimeCurrent(env, fsp).Format(layout), nil
}

// datetimeArg converts a datetime argument; integers are epoch ms.
func datetimeArg(env Env, v any) (time.Time, error) {
	return value.ToTime(v, env.Location())
}

func datetimeFormatTime(env Env, args []any) (any, error) {
	if args[0] == nil || args[1] == nil {
		return nil, nil
	}
	t, err := datetimeArg(env, args[0])
	if err != nil {
		return nil, err
	}
	pattern, ok := args[1].(string)
	if !ok {
		return nil, fmt.Errorf("the format should be a string, got %s", value.Describe(args[1]))
	}
	return datetimeFormat(t, pattern)
}

// datetimeCalc adds a Go duration string ("1h30m", "-90s"; "d" days are
// also accepted) to a datetime.
func datetimeCalc(env Env, args []any) (any, error) {
	if args[0] == nil || args[1] == nil {
		return nil, nil
	}
	t, err := datetimeArg(env, args[0])
	if err != nil {
		return nil, err
	}
	s, ok := args[1].(string)
	if !ok {
		return nil, fmt.Errorf("the duration should be a string, got %s", value.Describe(args[1]))
	}
	d, err := datetimeParseDuration(s)
	if err != nil {
		return nil, err
	}
	return t.Add(d), nil
}

// datetimeParseDuration parses a Go duration, also accepting whole days
// ("1d", "-2d12h").
func datetimeParseDuration(s string) (time.Duration, error) {
	sign := time.Duration(1)
	rest := strings.TrimSpace(s)
	if strings.HasPrefix(rest, "-") {
		sign, rest = -1, rest[1:]
	} else {
		rest = strings.TrimPrefix(rest, "+")
	}
	if rest == "" {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	var days time.Duration
	if i := strings.IndexByte(rest, 'd'); i > 0 {
		n, err := strconv.ParseInt(rest[:i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		days, rest = time.Duration(n)*24*time.Hour, rest[i+1:]
	}
	var d time.Duration
	if rest != "" {
		var err error
		if d, err = time.ParseDuration(rest); err != nil {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
	}
	return sign * (days + d), nil
}

// datetimeDiff is date2 - date1 in nanoseconds (int64), which is what
// eKuiper's code returns (its docs say days).
// An argument that is no datetime is an error even beside a null, which
// gives null: eKuiper converts both before it looks at their values.
func datetimeDiff(env Env, args []any) (any, error) {
	var ts [2]time.Time
	for i, a := range args {
		if a == nil {
			continue
		}
		t, err := datetimeArg(env, a)
		if err != nil {
			return nil, err
		}
		ts[i] = t
	}
	if args[0] == nil || args[1] == nil {
		return nil, nil
	}
	return int64(ts[1].Sub(ts[0])), nil
}

// datetimePart defines a one-argument function of a datetime.
func datetimePart(name string, aliases []string, f func(time.Time) any) *Def {
	return &Def{Name: name, Aliases: aliases, Kind: Scalar, MinArgs: 1, MaxArgs: 1,
		Scalar: func(env Env, args []any) (any, error) {
			if args[0] == nil {
				return nil, nil
			}
			t, err := datetimeArg(env, args[0])
			if err != nil {
				return nil, err
			}
			return f(t), nil
		}}
}

// datetimeFromDays is the date "YYYY-MM-DD" of a day number, day 1 being
// 1970-01-01 (eKuiper's epoch-based numbering); day 0 gives nil.
func datetimeFromDays(_ Env, args []any) (any, error) {
	if args[0] == nil {
		return nil, nil
	}
	n, err := arrayIntArg(args[0], "first")
	if err != nil {
		return nil, fmt.Errorf("from_days: %w", err)
	}
	if n == 0 {
		return nil, nil
	}
	return time.Unix(0, 0).UTC().AddDate(0, 0, int(n-1)).Format(time.DateOnly), nil
}

// datetimeFromUnix converts whole epoch seconds (0 is nil) to a
// datetime in env.Location().
func datetimeFromUnix(env Env, args []any) (any, error) {
	var t time.Time
	switch x := args[0].(type) {
	case nil:
		return nil, nil
	case int64:
		if x == 0 {
			// 0 seconds is nil, as in eKuiper (and from_days(0)).
			return nil, nil
		}
		t = time.Unix(x, 0)
	case float64:
		// Whole seconds, as in eKuiper: a fraction is an error, not
		// milliseconds.
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return nil, fmt.Errorf("cannot convert %s to int", value.Describe(x))
		}
		if x == 0 {
			return nil, nil
		}
		t = time.Unix(int64(x), 0)
	default:
		return nil, fmt.Errorf("the argument should be unix seconds, got %s", value.Describe(x))
	}
	if loc := env.Location(); loc != nil {
		t = t.In(loc)
	}
	return t, nil
}
