package differential

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/function"
)

// roundHugeDigitsMin is the number of digits from which eKuiper's round
// does not finish: past 308 digits it multiplies a big.Float by ten once
// per digit, so a digits argument such as 9007199254740993 loops for
// days.
const roundHugeDigitsMin = 1_000_000_000

// roundDigitsArg finds round(x, d) with a column as d.
var roundDigitsArg = regexp.MustCompile(`(?i)\bround\((?:[^(),]|\([^()]*\))*,\s*(\w+)\s*\)`)

// roundHugeDigits: eKuiper's harness timed out on a rule that rounds to a
// number of digits read from a column, and an input holds a huge positive
// integer in that column (round-huge-digits).
func roundHugeDigits(o Outcome, _ *function.Registry) bool {
	if o.Kind != EKuiperRefused || !strings.Contains(o.Case.OracleError, "timeout") {
		return false
	}
	for _, m := range roundDigitsArg.FindAllStringSubmatch(o.Case.Rule.SQL, -1) {
		col := m[1]
		if _, err := strconv.ParseFloat(col, 64); err == nil {
			continue // a literal
		}
		for _, evs := range o.Case.Inputs {
			for _, ev := range evs {
				if n, ok := intValue(ev.Data[col]); ok && n >= roundHugeDigitsMin {
					return true
				}
			}
		}
	}
	return false
}

// paddingTooLong finds rekuiper's refusal of a padding length.
var paddingTooLong = regexp.MustCompile(`[lr]pad: padding length (\d+) exceeds the limit`)

// goAllocLimit is the largest allocation Go makes on 64-bit Linux (2^48
// bytes): a longer strings.Repeat panics.
const goAllocLimit = 1 << 48

// hugePadding: eKuiper's output stopped (a panic in strings.Repeat) where
// rekuiper refused an rpad/lpad length Go cannot allocate (huge-padding).
// A length rekuiper refuses that Go could allocate is not explained.
func hugePadding(o Outcome, _ *function.Registry) bool {
	if !sqlHas(o, "rpad(", "lpad(") || !ekuiperStopped(o) {
		return false
	}
	return refusedCount(o, paddingTooLong, goAllocLimit)
}

// itemsMapOrder accepts, in a column items(), keys() or values() gives,
// eKuiper's members in another order: Go's map order, which changes from
// run to run (items-map-order).
func itemsMapOrder(o Outcome) func(col string, want, got any) bool {
	items := derivedFrom(o, "items(")
	keys := derivedFrom(o, "keys(")
	values := derivedFrom(o, "values(")
	if len(items)+len(keys)+len(values) == 0 {
		return nil
	}
	return func(col string, want, got any) bool {
		switch {
		case items[col] && keyValuePairs(want):
		case keys[col] && stringList(want):
		case values[col]:
		default:
			return false
		}
		return samePermutation(want, got)
	}
}

// stringList reports whether v is a list of strings.
func stringList(v any) bool {
	l, ok := v.([]any)
	if !ok {
		return false
	}
	for _, e := range l {
		if _, ok := e.(string); !ok {
			return false
		}
	}
	return true
}

// keyValuePairs reports whether v is a list of [key, value] pairs.
func keyValuePairs(v any) bool {
	l, ok := v.([]any)
	if !ok {
		return false
	}
	for _, e := range l {
		p, ok := e.([]any)
		if !ok || len(p) != 2 {
			return false
		}
		if _, ok := p[0].(string); !ok {
			return false
		}
	}
	return true
}

// durationDays is the number of days a time.Duration holds (about 292
// years): eKuiper's from_days multiplies the days into a Duration, which
// wraps around past it.
const durationDays = 106_751

// fromDaysOverflow accepts, in a column from_days() gives, eKuiper's
// date where rekuiper's lies more than durationDays from 1970-01-01:
// eKuiper's Duration wrapped around (from-days-overflow).
func fromDaysOverflow(o Outcome) func(col string, want, got any) bool {
	days := derivedFrom(o, "from_days(")
	if len(days) == 0 {
		return nil
	}
	epoch := time.Unix(0, 0).UTC()
	return func(col string, want, got any) bool {
		w, wok := want.(string)
		g, gok := got.(string)
		if !days[col] || !wok || !gok {
			return false
		}
		if _, err := time.Parse(time.DateOnly, w); err != nil {
			return false
		}
		year, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(g, "-"), "-", 2)[0])
		if err != nil {
			return false
		}
		// Dates past the Duration's range: years before 1677 or after 2262.
		lo, hi := epoch.AddDate(0, 0, -durationDays).Year(), epoch.AddDate(0, 0, durationDays).Year()
		if strings.HasPrefix(g, "-") {
			year = -year
		}
		return year < lo || year > hi
	}
}

// repeatTooLong finds rekuiper's refusal of a repeat count.
var repeatTooLong = regexp.MustCompile(`repeat: second argument should be between 0 and \d+, got (\d+)`)

// hugeRepeat: eKuiper's output stopped (a panic in make) where rekuiper
// refused a repeat count whose array of interfaces (16 bytes an element)
// Go cannot allocate (huge-repeat).
func hugeRepeat(o Outcome, _ *function.Registry) bool {
	if !sqlHas(o, "repeat(") || !ekuiperStopped(o) {
		return false
	}
	return refusedCount(o, repeatTooLong, goAllocLimit/16+1)
}

// refusedCount reports whether rekuiper emitted an error row whose text
// re matches with a count (its first group) of at least least.
func refusedCount(o Outcome, re *regexp.Regexp, least uint64) bool {
	for _, em := range o.Actual {
		for _, r := range em {
			e, ok := r["error"].(string)
			if !ok || len(r) != 1 {
				continue
			}
			for _, m := range re.FindAllStringSubmatch(e, -1) {
				if n, err := strconv.ParseUint(m[1], 10, 64); err == nil && n >= least {
					return true
				}
			}
		}
	}
	return false
}
