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
// message, which avoids hashing when messages share a layout.
func (c *JSONCodec) key(idx int) (string, error) {
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
	top := c.depth == 1 && idx < maxLayout
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
			c.layout[idx] = k
		} else if idx == len(c.layout) {
			c.layout = append(c.layout, k)
		}
	}
	return k, nil
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

// scanNumber scans the number at c.pos: an int64 (isInt) or a float64.
func (c *JSONCodec) scanNumber() (i64 int64, f float64, isInt bool, err error) {
	start := c.pos
	i := c.pos
	neg := false
	if c.data[i] == '-' {
		neg = true
		i++
	}
	if i >= len(c.data) {
		c.pos = i
		return 0, 0, false, c.errEOF()
	}
	var u uint64
	overflow := false
	switch b := c.data[i]; {
	case b == '0':
		i++
	case b >= '1' && b <= '9':
		for i < len(c.data) && c.data[i] >= '0' && c.data[i] <= '9' {
			d := uint64(c.data[i] - '0')
			if u > (math.MaxUint64-d)/10 {
				overflow = true
			} else {
				u = u*10 + d
			}
			i++
		}
	default:
		c.pos = i
		return 0, 0, false, c.errChar("in numeric literal")
	}
	isFloat := false
	if i < len(c.data) && c.data[i] == '.' {
		isFloat = true
		i++
		if i >= len(c.data) {
			c.pos = i
			return 0, 0, false, c.errEOF()
		}
		if c.data[i] < '0' || c.data[i] > '9' {
			c.pos = i
			return 0, 0, false, c.errChar("after decimal point in numeric literal")
		}
		for i < len(c.data) && c.data[i] >= '0' && c.data[i] <= '9' {
			i++
		}
	}
	if i < len(c.data) && (c.data[i] == 'e' || c.data[i] == 'E') {
		isFloat = true
		i++
		if i < len(c.data) && (c.data[i] == '+' || c.data[i] == '-') {
			i++
		}
		if i >= len(c.data) {
			c.pos = i
			return 0, 0, false, c.errEOF()
		}
		if c.data[i] < '0' || c.data[i] > '9' {
			c.pos = i
			return 0, 0, false, c.errChar("in exponent of numeric literal")
		}
		for i < len(c.data) && c.data[i] >= '0' && c.data[i] <= '9' {
			i++
		}
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
	f, err = strconv.ParseFloat(string(c.data[start:i]), 64)
	if err != nil {
		return 0, 0, false, &SyntaxError{Msg: "number " + string(c.data[start:i]) + " is out of range", Offset: start}
	}
	return 0, f, false, nil
}
