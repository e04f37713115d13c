package function

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// datetimeFormat renders t with a Java-style pattern (eKuiper's
// format_time). Letters, repeated n times:
//
//	G era (AD)            y or Y year (yy: two digits, yyyy: four; other
//	                      counts are an error, as in eKuiper)
//	M month (1, 01, Jan, January for n = 1, 2, 3, 4+)
//	d day of month        D day of year          E weekday (EEE Mon; EEEE Monday)
//	H hour 0-23 (HH only) k hour 1-24            K hour 0-11     h hour 1-12
//	m minute              s second               a AM/PM
//	S fraction of second, n digits, preceded by a '.' unless the pattern
//	  already wrote one (eKuiper writes the dot itself: "ssSSS" gives
//	  "20.123"; "ss.SSS" gives "20.123" too, not eKuiper's "20..123")
//	z zone name (UTC)     Z offset -0700 (ZZZZ+: -07:00)
//	X offset, Z for UTC (X: -07, XX: -0700, XXX+: -07:00)
//
// Numbers are zero-padded to n digits. Text in single quotes is literal
// (two single quotes make one); other characters are copied.
func datetimeFormat(t time.Time, pattern string) (string, error) {
	var b strings.Builder
	rs := []rune(pattern)
	for i := 0; i < len(rs); {
		c := rs[i]
		if c == '\'' {
			j := i + 1
			if j < len(rs) && rs[j] == '\'' {
				b.WriteByte('\'')
				i += 2
				continue
			}
			for j < len(rs) {
				if rs[j] == '\'' {
					if j+1 < len(rs) && rs[j+1] == '\'' {
						b.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				b.WriteRune(rs[j])
				j++
			}
			if j >= len(rs) {
				return "", fmt.Errorf("unterminated quote in time format %q", pattern)
			}
			i = j + 1
			continue
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			b.WriteRune(c)
			i++
			continue
		}
		n := 1
		for i+n < len(rs) && rs[i+n] == c {
			n++
		}
		i += n
		if err := datetimeCheckField(c, n); err != nil {
			return "", fmt.Errorf("invalid time format %s: %w", pattern, err)
		}
		datetimeWriteField(&b, t, c, n)
	}
	return b.String(), nil
}

// datetimeCheckField refuses the letter counts eKuiper refuses.
func datetimeCheckField(c rune, n int) error {
	switch c {
	case 'y', 'Y':
		if n != 2 && n != 4 {
			return fmt.Errorf("%c must be written 2 or 4 times", c)
		}
	case 'H':
		if n != 2 {
			return errors.New("only HH is supported for H")
		}
	case 'E':
		if n < 3 {
			return errors.New("E must be written 3 or 4 times")
		}
	}
	return nil
}

func datetimePad(b *strings.Builder, v, n int) {
	s := strconv.Itoa(v)
	for k := len(s); k < n; k++ {
		b.WriteByte('0')
	}
	b.WriteString(s)
}

func datetimeWriteField(b *strings.Builder, t time.Time, c rune, n int) {
	switch c {
	case 'G':
		if t.Year() > 0 {
			b.WriteString("AD")
		} else {
			b.WriteString("BC")
		}
	case 'y', 'Y':
		if n == 2 {
			datetimePad(b, t.Year()%100, 2)
		} else {
			datetimePad(b, t.Year(), n)
		}
	case 'M':
		switch {
		case n >= 4:
			b.WriteString(t.Month().String())
		case n == 3:
			b.WriteString(t.Month().String()[:3])
		default:
			datetimePad(b, int(t.Month()), n)
		}
	case 'd':
		datetimePad(b, t.Day(), n)
	case 'D':
		datetimePad(b, t.YearDay(), n)
	case 'E':
		if n >= 4 {
			b.WriteString(t.Weekday().String())
		} else {
			b.WriteString(t.Weekday().String()[:3])
		}
	case 'a':
		if t.Hour() < 12 {
			b.WriteString("AM")
		} else {
			b.WriteString("PM")
		}
	case 'H':
		datetimePad(b, t.Hour(), n)
	case 'k':
		h := t.Hour()
		if h == 0 {
			h = 24
		}
		datetimePad(b, h, n)
	case 'K':
		datetimePad(b, t.Hour()%12, n)
	case 'h':
		h := t.Hour() % 12
		if h == 0 {
			h = 12
		}
		datetimePad(b, h, n)
	case 'm':
		datetimePad(b, t.Minute(), n)
	case 's':
		datetimePad(b, t.Second(), n)
	case 'S':
		if s := b.String(); len(s) == 0 || s[len(s)-1] != '.' {
			b.WriteByte('.')
		}
		digits := fmt.Sprintf("%09d", t.Nanosecond())
		if n <= 9 {
			b.WriteString(digits[:n])
		} else {
			b.WriteString(digits + strings.Repeat("0", n-9))
		}
	case 'z':
		b.WriteString(t.Format("MST"))
	case 'Z':
		if n >= 4 {
			b.WriteString(t.Format("-07:00"))
		} else {
			b.WriteString(t.Format("-0700"))
		}
	case 'X':
		switch n {
		case 1:
			b.WriteString(t.Format("Z07"))
		case 2:
			b.WriteString(t.Format("Z0700"))
		default:
			b.WriteString(t.Format("Z07:00"))
		}
	default:
		for k := 0; k < n; k++ {
			b.WriteRune(c)
		}
	}
}
