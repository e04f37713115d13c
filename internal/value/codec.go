package value

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"time"
)

// The binary value codec used by checkpoints and the durable logs. It keeps
// every distinction of the value model (int64 vs float64, absent vs nil
// inside objects), writes object keys in sorted order so equal values encode
// to equal bytes, and is versioned by the containers that embed it.
const (
	tagNil byte = iota
	tagInt
	tagFloat
	tagString
	tagFalse
	tagTrue
	tagBytes
	tagTime
	tagArray
	tagObject
)

// ErrCorrupt is returned when encoded bytes cannot be decoded.
var ErrCorrupt = errors.New("corrupt encoded value")

// AppendValue appends the encoding of v to buf. Values outside the value
// model are normalised first (see Normalize).
func AppendValue(buf []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(buf, tagNil)
	case int64:
		return binary.AppendVarint(append(buf, tagInt), x)
	case float64:
		return binary.LittleEndian.AppendUint64(append(buf, tagFloat), math.Float64bits(x))
	case string:
		return AppendString(append(buf, tagString), x)
	case bool:
		if x {
			return append(buf, tagTrue)
		}
		return append(buf, tagFalse)
	case []byte:
		buf = binary.AppendUvarint(append(buf, tagBytes), uint64(len(x)))
		return append(buf, x...)
	case time.Time:
		buf = binary.AppendVarint(append(buf, tagTime), x.UnixNano())
		return AppendString(buf, locationName(x))
	case []any:
		buf = binary.AppendUvarint(append(buf, tagArray), uint64(len(x)))
		for _, e := range x {
			buf = AppendValue(buf, e)
		}
		return buf
	case map[string]any:
		return AppendObject(append(buf, tagObject), x)
	}
	if n := Normalize(v); reflect.TypeOf(n) != reflect.TypeOf(v) {
		return AppendValue(buf, n)
	}
	// Outside the value model: keep its string form rather than lose it.
	return AppendString(append(buf, tagString), fmt.Sprint(v))
}

func locationName(t time.Time) string {
	if t.Location() == time.UTC {
		return "UTC"
	}
	return t.Location().String()
}

// AppendObject appends an object (without tag) with sorted keys.
func AppendObject(buf []byte, m map[string]any) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	buf = binary.AppendUvarint(buf, uint64(len(keys)))
	for _, k := range keys {
		buf = AppendString(buf, k)
		buf = AppendValue(buf, m[k])
	}
	return buf
}

// AppendString appends a length-prefixed string.
func AppendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// Reader decodes values written by AppendValue and friends. The first error
// sticks: later reads return zero values and Err reports it.
type Reader struct {
	buf []byte
	err error
}

// NewReader reads from b.
func NewReader(b []byte) *Reader { return &Reader{buf: b} }

// Err is the first decoding error.
func (r *Reader) Err() error { return r.err }

// Len is the number of bytes left.
func (r *Reader) Len() int { return len(r.buf) }

func (r *Reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrCorrupt, what)
	}
	r.buf = nil
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	v, n := binary.Uvarint(r.buf)
	r.skipVarint(n, "bad uvarint")
	return v
}

// Varint reads a signed varint.
func (r *Reader) Varint() int64 {
	v, n := binary.Varint(r.buf)
	r.skipVarint(n, "bad varint")
	return v
}

// skipVarint moves past the n bytes binary.Uvarint or binary.Varint read. An
// n <= 0 (input too short, or more than 64 bits) is corrupt: what names it
// in the error; the value they return with it is 0.
func (r *Reader) skipVarint(n int, what string) {
	if n <= 0 {
		r.fail(what)
		return
	}
	r.buf = r.buf[n:]
}

// take returns the next n bytes of the input (not a copy) and moves past
// them; with fewer left it fails with what and reports false.
func (r *Reader) take(n uint64, what string) ([]byte, bool) {
	if n > uint64(len(r.buf)) {
		r.fail(what)
		return nil, false
	}
	b := r.buf[:n]
	r.buf = r.buf[n:]
	return b, true
}

// String reads a length-prefixed string.
func (r *Reader) String() string {
	b, _ := r.take(r.Uvarint(), "string longer than input")
	return string(b)
}

// Bytes reads n raw bytes (a copy). A negative n is more than the input.
func (r *Reader) Bytes(n int) []byte {
	b, _ := r.take(uint64(n), "bytes longer than input")
	return append([]byte(nil), b...)
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if len(r.buf) == 0 {
		r.fail("unexpected end")
		return 0
	}
	b := r.buf[0]
	r.buf = r.buf[1:]
	return b
}

// Object reads an object written by AppendObject.
func (r *Reader) Object() map[string]any {
	n := r.Uvarint()
	if n > uint64(len(r.buf)) {
		r.fail("object longer than input")
		return nil
	}
	m := make(map[string]any, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		k := r.String()
		m[k] = r.Value()
	}
	return m
}

// Value reads one value.
func (r *Reader) Value() any {
	switch tag := r.Byte(); tag {
	case tagNil:
		return nil
	case tagInt:
		return r.Varint()
	case tagFloat:
		b, ok := r.take(8, "short float")
		if !ok {
			return nil
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	case tagString:
		return r.String()
	case tagFalse:
		return false
	case tagTrue:
		return true
	case tagBytes:
		b, ok := r.take(r.Uvarint(), "bytes longer than input")
		if !ok {
			return nil
		}
		return append([]byte(nil), b...)
	case tagTime:
		ns := r.Varint()
		loc := time.UTC
		if name := r.String(); name != "UTC" && name != "" {
			if l, err := time.LoadLocation(name); err == nil {
				loc = l
			}
		}
		return time.Unix(0, ns).In(loc)
	case tagArray:
		n := r.Uvarint()
		if n > uint64(len(r.buf)) {
			r.fail("array longer than input")
			return nil
		}
		out := make([]any, 0, n)
		for i := uint64(0); i < n && r.err == nil; i++ {
			out = append(out, r.Value())
		}
		return out
	case tagObject:
		return r.Object()
	default:
		if r.err == nil {
			r.fail(fmt.Sprintf("unknown tag %d", tag))
		}
		return nil
	}
}
