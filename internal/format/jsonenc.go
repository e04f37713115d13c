package format

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rekuiper/rekuiper/internal/row"
)

// jsonWriter appends JSON to buf. Object keys are written sorted, as
// encoding/json writes maps; fields is a stack of key/value scratch shared
// by all nesting levels.
type jsonWriter struct {
	buf    []byte
	fields []field
}

type field struct {
	k string
	v any
}

// AppendJSON appends the JSON encoding of v to dst. It writes what
// encoding/json writes for the same value, except that it does not escape
// '<', '>' and '&': map keys sorted, int64 as integers, float64 in
// encoding/json's shortest form (3.0 is written 3), []byte as standard
// base64, time.Time as RFC 3339 with nanoseconds. NaN and infinities are an
// error. Types outside the value model are marshalled with encoding/json.
func AppendJSON(dst []byte, v any) ([]byte, error) {
	w := jsonWriter{buf: dst}
	err := w.value(v)
	return w.buf, err
}

// Encode encodes rows as a JSON array.
func (c *JSONCodec) Encode(rows []map[string]any) ([]byte, error) {
	c.w.buf = append(c.w.buf[:0], '[')
	for i, r := range rows {
		if i > 0 {
			c.w.buf = append(c.w.buf, ',')
		}
		if err := c.w.object(r); err != nil {
			return nil, err
		}
	}
	c.w.buf = append(c.w.buf, ']')
	return c.w.result(), nil
}

// EncodeRow encodes one row as a JSON object.
func (c *JSONCodec) EncodeRow(row map[string]any) ([]byte, error) {
	c.w.buf = c.w.buf[:0]
	if err := c.w.object(row); err != nil {
		return nil, err
	}
	return c.w.result(), nil
}

// EncodeValue encodes any value as JSON.
func (c *JSONCodec) EncodeValue(v any) ([]byte, error) {
	c.w.buf = c.w.buf[:0]
	if err := c.w.value(v); err != nil {
		return nil, err
	}
	return c.w.result(), nil
}

// result returns a caller-owned copy of the buffer, so the scratch buffer
// can be reused by the next call.
func (w *jsonWriter) result() []byte {
	out := make([]byte, len(w.buf))
	copy(out, w.buf)
	if cap(w.buf) > 1<<20 {
		w.buf = nil // do not keep a huge buffer after one large message
	}
	return out
}

func (w *jsonWriter) value(v any) error {
	switch x := v.(type) {
	case nil:
		w.buf = append(w.buf, "null"...)
	case string:
		w.buf = appendString(w.buf, x)
	case int64:
		w.buf = strconv.AppendInt(w.buf, x, 10)
	case float64:
		b, err := appendFloat(w.buf, x)
		if err != nil {
			return err
		}
		w.buf = b
	case bool:
		w.buf = strconv.AppendBool(w.buf, x)
	case map[string]any:
		return w.object(x)
	case []any:
		if x == nil {
			w.buf = append(w.buf, "null"...)
			return nil
		}
		w.buf = append(w.buf, '[')
		for i, e := range x {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			if err := w.value(e); err != nil {
				return err
			}
		}
		w.buf = append(w.buf, ']')
	case []byte:
		if x == nil {
			w.buf = append(w.buf, "null"...)
			return nil
		}
		w.buf = append(w.buf, '"')
		w.buf = base64.StdEncoding.AppendEncode(w.buf, x)
		w.buf = append(w.buf, '"')
	case time.Time:
		if y := x.Year(); y < 0 || y >= 10000 {
			return fmt.Errorf("encode json: datetime year %d outside of range [0,9999]", y)
		}
		w.buf = append(w.buf, '"')
		w.buf = x.AppendFormat(w.buf, time.RFC3339Nano)
		w.buf = append(w.buf, '"')
	case []map[string]any:
		w.buf = append(w.buf, '[')
		for i, e := range x {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			if err := w.object(e); err != nil {
				return err
			}
		}
		w.buf = append(w.buf, ']')
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode json: %w", err)
		}
		w.buf = append(w.buf, b...)
	}
	return nil
}

func (w *jsonWriter) object(m map[string]any) error {
	if m == nil {
		w.buf = append(w.buf, "null"...)
		return nil
	}
	base := len(w.fields)
	for k, v := range m {
		w.fields = append(w.fields, field{k, v})
	}
	fields := w.fields[base:]
	slices.SortFunc(fields, func(a, b field) int { return strings.Compare(a.k, b.k) })
	w.buf = append(w.buf, '{')
	var err error
	for i, f := range fields {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		w.buf = appendString(w.buf, f.k)
		w.buf = append(w.buf, ':')
		if err = w.value(f.v); err != nil {
			break
		}
	}
	w.buf = append(w.buf, '}')
	clear(w.fields[base:]) // drop references to the caller's values
	w.fields = w.fields[:base]
	return err
}

// appendFloat formats f as encoding/json does.
func appendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, fmt.Errorf("encode json: unsupported value %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
	abs := math.Abs(f)
	fmtc := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmtc = 'e'
	}
	dst = strconv.AppendFloat(dst, f, fmtc, -1, 64)
	if fmtc == 'e' {
		// e-09 → e-9, as encoding/json writes
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD and
// U+2028/U+2029 are escaped, as encoding/json does; HTML characters are not
// escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// SlotView selects the columns of slot rows to encode, as the sink
// properties fields and excludeFields select them from maps. A nil view
// encodes every column.
type SlotView struct {
	cols *row.Columns
	keys []string // in JSON key order (sorted)
	idx  []int    // the column of each key, -1 for none
	null bool     // absent columns are written as null (fields)
}

// NewSlotView returns the view of cols that keeps fields (in any order,
// absent ones as null) or, when fields is empty, drops exclude.
func NewSlotView(cols *row.Columns, fields, exclude []string) *SlotView {
	v := &SlotView{cols: cols, null: len(fields) > 0}
	index := func(name string) int {
		for j := range cols.Len() {
			if cols.Name(j) == name {
				return j
			}
		}
		return -1
	}
	if v.null {
		v.keys = slices.Clone(fields)
		slices.Sort(v.keys)
		v.keys = slices.Compact(v.keys)
		for _, k := range v.keys {
			v.idx = append(v.idx, index(k))
		}
		return v
	}
	for _, j := range cols.Sorted() {
		if !slices.Contains(exclude, cols.Name(j)) {
			v.keys = append(v.keys, cols.Name(j))
			v.idx = append(v.idx, j)
		}
	}
	return v
}

// Columns returns the columns the view was made for.
func (v *SlotView) Columns() *row.Columns { return v.cols }

// EncodeSlots encodes slot rows as a JSON array, as Encode encodes their
// maps, through view (nil: every column). The returned bytes are the
// codec's buffer: valid until its next call, not to be kept (a caller that
// keeps them copies them).
func (c *JSONCodec) EncodeSlots(rows *row.SlotRows, view *SlotView) ([]byte, error) {
	c.w.buf = append(c.w.buf[:0], '[')
	for i := range rows.Len() {
		if i > 0 {
			c.w.buf = append(c.w.buf, ',')
		}
		if err := c.w.slotRow(rows, i, view); err != nil {
			return nil, err
		}
	}
	c.w.buf = append(c.w.buf, ']')
	return c.w.scratch(), nil
}

// EncodeSlotRow encodes row i of rows as a JSON object, as EncodeRow
// encodes its map. Like EncodeSlots, it returns the codec's buffer.
func (c *JSONCodec) EncodeSlotRow(rows *row.SlotRows, i int, view *SlotView) ([]byte, error) {
	c.w.buf = c.w.buf[:0]
	if err := c.w.slotRow(rows, i, view); err != nil {
		return nil, err
	}
	return c.w.scratch(), nil
}

// scratch returns the buffer itself, for the next call to overwrite.
func (w *jsonWriter) scratch() []byte {
	out := w.buf
	if cap(w.buf) > 1<<20 {
		w.buf = nil // do not keep a huge buffer after one large message
	}
	return out
}

// slotRow writes row i of rows as an object, keys sorted as object writes
// a map's.
func (w *jsonWriter) slotRow(rows *row.SlotRows, i int, view *SlotView) error {
	cols, vals := rows.Columns(), rows.Row(i)
	w.buf = append(w.buf, '{')
	first := true
	field := func(k string, v any) error {
		if !first {
			w.buf = append(w.buf, ',')
		}
		first = false
		w.buf = appendString(w.buf, k)
		w.buf = append(w.buf, ':')
		return w.value(v)
	}
	if view == nil {
		for _, j := range cols.Sorted() {
			if v := vals[j]; v != row.Omitted {
				if err := field(cols.Name(j), v); err != nil {
					return err
				}
			}
		}
	} else {
		for n, k := range view.keys {
			var v any = row.Omitted
			if j := view.idx[n]; j >= 0 {
				v = vals[j]
			}
			if v == row.Omitted {
				if !view.null {
					continue
				}
				v = nil
			}
			if err := field(k, v); err != nil {
				return err
			}
		}
	}
	w.buf = append(w.buf, '}')
	return nil
}
