package format

import (
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// key decodes the idx-th key of an object, interning it so that repeated
// field names across messages cost no allocation. Keys of top-level objects
// are first compared with the key at the same position in the previous
// message, which avoids scanning and hashing when messages share a layout.
func (c *JSONCodec) key(idx int) (string, error) {
	top := c.depth == 1 && idx < maxLayout
	if top && idx < len(c.layout) && c.layoutPlain[idx] {
		// A remembered key of plain bytes followed by the closing quote
		// is exactly what scanning the string would give.
		k := c.layout[idx]
		start := c.pos + 1
		end := start + len(k)
		if end < len(c.data) && c.data[end] == '"' && string(c.data[start:end]) == k {
			c.pos = end + 1
			return k, nil
		}
	}
	start, end, simple, err := c.scanString()
	if err != nil {
		return "", err
	}
	var raw []byte
	if simple {
		raw = c.data[start:end]
	} else {
		if raw, err = c.unescape(); err != nil {
			return "", err
		}
	}
	if top && idx < len(c.layout) && c.layout[idx] == string(raw) {
		return c.layout[idx], nil
	}
	k, ok := c.keys[string(raw)]
	if !ok {
		k = string(raw)
		if len(c.keys) < maxInterned {
			c.keys[k] = k
		}
	}
	if top {
		if idx < len(c.layout) {
			c.layout[idx], c.layoutPlain[idx] = k, isPlain(k)
		} else if idx == len(c.layout) {
			c.layout = append(c.layout, k)
			c.layoutPlain = append(c.layoutPlain, isPlain(k))
		}
	}
	return k, nil
}

// isPlain reports whether s consists of plain bytes only (see plainByte).
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plainByte[s[i]] {
			return false
		}
	}
	return true
}

// stringValue decodes a string value. Unescaped strings of small payloads
// share one string copy of the whole payload.
func (c *JSONCodec) stringValue() (string, error) {
	start, end, simple, err := c.scanString()
	if err != nil {
		return "", err
	}
	if !simple {
		raw, err := c.unescape()
		if err != nil {
			return "", err
		}
		return string(raw), nil
	}
	if len(c.data) > maxSharedPayload {
		return string(c.data[start:end]), nil
	}
	if c.str == "" {
		c.str = string(c.data)
	}
	return c.str[start:end], nil
}

// arenaString decodes a string value into the DecodeTuples arena.
func (c *JSONCodec) arenaString() (any, error) {
	start, end, simple, err := c.scanString()
	if err != nil {
		return nil, err
	}
	if simple {
		return c.ar.String(c.data[start:end]), nil
	}
	raw, err := c.unescape()
	if err != nil {
		return nil, err
	}
	return c.ar.String(raw), nil
}

// unescape decodes the string at c.pos (its opening quote) into c.esc,
// replacing invalid UTF-8 and lone surrogates with U+FFFD as encoding/json
// does, and leaves c.pos after the closing quote.
func (c *JSONCodec) unescape() ([]byte, error) {
	buf := c.esc[:0]
	i := c.pos + 1
	for {
		if i >= len(c.data) {
			c.pos = len(c.data)
			return nil, c.errEOF()
		}
		b := c.data[i]
		switch {
		case b == '"':
			c.pos = i + 1
			c.esc = buf
			return buf, nil
		case b == '\\':
			i++
			if i >= len(c.data) {
				c.pos = i
				return nil, c.errEOF()
			}
			switch e := c.data[i]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
				i++
			case 'b':
				buf = append(buf, '\b')
				i++
			case 'f':
				buf = append(buf, '\f')
				i++
			case 'n':
				buf = append(buf, '\n')
				i++
			case 'r':
				buf = append(buf, '\r')
				i++
			case 't':
				buf = append(buf, '\t')
				i++
			case 'u':
				r, n, err := c.hex4(i + 1)
				if err != nil {
					return nil, err
				}
				i = n
				if utf16.IsSurrogate(r) {
					r2 := utf8.RuneError
					if i+1 < len(c.data) && c.data[i] == '\\' && c.data[i+1] == 'u' {
						if lo, n2, err := c.hex4(i + 2); err == nil {
							if dec := utf16.DecodeRune(r, lo); dec != utf8.RuneError {
								r2, i = dec, n2
							}
						} else {
							return nil, err
						}
					}
					r = r2
				}
				buf = utf8.AppendRune(buf, r)
			default:
				c.pos = i
				return nil, c.errChar("in string escape code")
			}
		case b < 0x20:
			c.pos = i
			return nil, c.errChar("in string literal")
		case b < utf8.RuneSelf:
			buf = append(buf, b)
			i++
		default:
			r, size := utf8.DecodeRune(c.data[i:])
			if r == utf8.RuneError && size == 1 {
				buf = utf8.AppendRune(buf, utf8.RuneError)
			} else {
				buf = append(buf, c.data[i:i+size]...)
			}
			i += size
		}
	}
}

// hex4 reads four hex digits at i and returns the code unit and the index
// after them.
func (c *JSONCodec) hex4(i int) (rune, int, error) {
	var r rune
	for j := 0; j < 4; j++ {
		if i+j >= len(c.data) {
			c.pos = len(c.data)
			return 0, 0, c.errEOF()
		}
		b := c.data[i+j]
		switch {
		case b >= '0' && b <= '9':
			r = r<<4 | rune(b-'0')
		case b >= 'a' && b <= 'f':
			r = r<<4 | rune(b-'a'+10)
		case b >= 'A' && b <= 'F':
			r = r<<4 | rune(b-'A'+10)
		default:
			c.pos = i + j
			return 0, 0, c.errChar("in \\u hexadecimal character escape")
		}
	}
	return r, i + 4, nil
}

// number decodes a JSON number: int64 when it has no fraction or exponent
// and fits, float64 otherwise.
func (c *JSONCodec) number() (any, error) {
	i, f, isInt, err := c.scanNumber()
	switch {
	case err != nil:
		return nil, err
	case c.ar != nil && isInt:
		return c.ar.Int(i), nil
	case c.ar != nil:
		return c.ar.Float(f), nil
	case isInt:
		return i, nil
	}
	return f, nil
}

// float64pow10 holds the powers of ten that float64 represents exactly.
var float64pow10 = [...]float64{
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
}

// scanNumber scans the number at c.pos: an int64 (isInt) or a float64.
//
// A float whose significant digits form an integer below 2^53 and whose
// decimal exponent is within ±22 is computed as one multiplication or
// division of two exactly represented float64s, which IEEE rounds
// correctly: the same bits strconv.ParseFloat gives (it takes the same
// shortcut). Any other float goes to strconv.ParseFloat.
func (c *JSONCodec) scanNumber() (i64 int64, f float64, isInt bool, err error) {
	data := c.data
	start := c.pos
	i := c.pos
	neg := false
	if data[i] == '-' {
		neg = true
		i++
	}
	if i >= len(data) {
		c.pos = i
		return 0, 0, false, c.errEOF()
	}
	// u accumulates the digits of the integer and fraction parts while it
	// stays exact; digits counts them from the first non-zero one.
	var u uint64
	digits := 0
	overflow := false
	switch b := data[i]; {
	case b == '0':
		i++
	case b >= '1' && b <= '9':
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			d := uint64(data[i] - '0')
			if u > (math.MaxUint64-d)/10 {
				overflow = true
			} else {
				u = u*10 + d
			}
			digits++
			i++
		}
	default:
		c.pos = i
		return 0, 0, false, c.errChar("in numeric literal")
	}
	isFloat := false
	exp10 := 0
	if i < len(data) && data[i] == '.' {
		isFloat = true
		i++
		if i >= len(data) {
			c.pos = i
			return 0, 0, false, c.errEOF()
		}
		if data[i] < '0' || data[i] > '9' {
			c.pos = i
			return 0, 0, false, c.errChar("after decimal point in numeric literal")
		}
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			if d := data[i] - '0'; digits < 19 {
				u = u*10 + uint64(d)
				exp10--
				if u != 0 {
					digits++
				}
			} else {
				overflow = true
			}
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		isFloat = true
		i++
		eneg := false
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			eneg = data[i] == '-'
			i++
		}
		if i >= len(data) {
			c.pos = i
			return 0, 0, false, c.errEOF()
		}
		if data[i] < '0' || data[i] > '9' {
			c.pos = i
			return 0, 0, false, c.errChar("in exponent of numeric literal")
		}
		e := 0
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			if e < 10000 {
				e = e*10 + int(data[i]-'0')
			}
			i++
		}
		if eneg {
			e = -e
		}
		exp10 += e
	}
	c.pos = i
	if !isFloat && !overflow {
		if !neg && u <= 1<<63-1 {
			return int64(u), 0, true, nil
		}
		if neg && u <= 1<<63 {
			return int64(-u), 0, true, nil // two's complement wrap gives the exact negative
		}
	}
	if !overflow && u < 1<<53 && exp10 >= -22 && exp10 <= 22 {
		f = float64(u)
		if exp10 < 0 {
			f /= float64pow10[-exp10]
		} else {
			f *= float64pow10[exp10]
		}
		if neg {
			f = -f
		}
		return 0, f, false, nil
	}
	f, err = strconv.ParseFloat(string(data[start:i]), 64)
	if err != nil {
		return 0, 0, false, &SyntaxError{Msg: "number " + string(data[start:i]) + " is out of range", Offset: start}
	}
	return 0, f, false, nil
}
