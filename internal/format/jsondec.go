package format

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/rekuiper/rekuiper/internal/row"
)

const (
	// maxDepth bounds nesting so hostile payloads cannot exhaust the stack.
	maxDepth = 1000
	// maxInterned bounds the field-name cache of one codec.
	maxInterned = 4096
	// maxLayout bounds the remembered top-level key order.
	maxLayout = 64
	// maxSharedPayload is the largest payload whose string values share one
	// copy of the payload; larger payloads copy each string so that a small
	// retained value does not pin a large buffer.
	maxSharedPayload = 4096
)

// SyntaxError is a malformed JSON payload.
type SyntaxError struct {
	Msg    string
	Offset int // byte offset in the payload where the problem was found
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("decode json: %s at offset %d", e.Msg, e.Offset)
}

// JSONCodec decodes and encodes JSON. It interns field names across calls;
// it is not safe for concurrent use.
type JSONCodec struct {
	keys   map[string]string
	layout []string // keys of the last top-level object, in order
	// layoutPlain[i] is set when layout[i] consists of plain bytes only, so
	// that a payload holding it verbatim can be matched without a scan.
	layoutPlain []bool
	stack       []any  // array elements under construction, all depths
	esc         []byte // unescaped string scratch
	hint        int    // field count of the last top-level object
	w           jsonWriter

	// DecodeTuples state: the stream's declared fields (nil: schemaless),
	// the arena tuples and values come from, and the slot of the key at
	// each top-level position of the last message (-1: undeclared).
	schema   *row.Layout
	arena    row.Arena
	slotKeys []string
	slotIdx  []int

	// per-Decode state
	data  []byte
	pos   int
	str   string // lazily string(data), shared by unescaped string values
	depth int
	ar    *row.Arena // set while DecodeTuples stores scalars in the arena
}

// NewJSON returns a JSON codec.
func NewJSON() *JSONCodec {
	return &JSONCodec{keys: make(map[string]string)}
}

// Decode decodes a JSON object into one record or a JSON array of objects
// into one record per element. Any other top-level value is an error.
func (c *JSONCodec) Decode(payload []byte) ([]map[string]any, error) {
	c.data, c.pos, c.str, c.depth = payload, 0, "", 0
	defer func() { c.data, c.str = nil, "" }()
	c.skipWS()
	if c.pos >= len(c.data) {
		return nil, c.errEOF()
	}
	switch c.data[c.pos] {
	case '{':
		m, err := c.object(c.hint)
		if err != nil {
			return nil, err
		}
		if err := c.end(); err != nil {
			return nil, err
		}
		c.hint = len(m)
		return []map[string]any{m}, nil
	case '[':
		start := c.pos
		v, err := c.array()
		if err != nil {
			return nil, err
		}
		if err := c.end(); err != nil {
			return nil, err
		}
		return records(v.([]any), start)
	}
	return nil, c.notRecords()
}

// records checks that the elements of a top-level array are all objects.
func records(arr []any, start int) ([]map[string]any, error) {
	out := make([]map[string]any, len(arr))
	for i, e := range arr {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, &SyntaxError{Msg: fmt.Sprintf("array element %d is %s, expected an object", i, jsonKind(e)), Offset: start}
		}
		out[i] = m
	}
	return out, nil
}

// notRecords reports a top-level value (at c.pos) that is neither an object
// nor an array.
func (c *JSONCodec) notRecords() error {
	v, err := c.value()
	if err != nil {
		return err
	}
	return &SyntaxError{Msg: fmt.Sprintf("expected an object or an array of objects, found %s", jsonKind(v)), Offset: 0}
}

// DecodeValue decodes any single JSON value into the value model.
func (c *JSONCodec) DecodeValue(payload []byte) (any, error) {
	c.data, c.pos, c.str, c.depth = payload, 0, "", 0
	defer func() { c.data, c.str = nil, "" }()
	v, err := c.value()
	if err != nil {
		return nil, err
	}
	if err := c.end(); err != nil {
		return nil, err
	}
	return v, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case int64, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

func (c *JSONCodec) end() error {
	c.skipWS()
	if c.pos < len(c.data) {
		return c.errChar("after top-level value")
	}
	return nil
}

func (c *JSONCodec) errEOF() error {
	return &SyntaxError{Msg: "unexpected end of JSON input", Offset: len(c.data)}
}

// errChar reports the byte at c.pos as invalid in the given context.
func (c *JSONCodec) errChar(context string) error {
	if c.pos >= len(c.data) {
		return c.errEOF()
	}
	return &SyntaxError{Msg: fmt.Sprintf("invalid character %s %s", quoteChar(c.data[c.pos]), context), Offset: c.pos}
}

func quoteChar(b byte) string {
	switch {
	case b == '\'':
		return `'\''`
	case b == '"':
		return `'"'`
	case b >= utf8.RuneSelf:
		return fmt.Sprintf(`'\x%02x'`, b)
	case b < 0x20 || b == 0x7f:
		q := strconv.Quote(string(rune(b)))
		return "'" + q[1:len(q)-1] + "'"
	}
	return "'" + string(rune(b)) + "'"
}

func (c *JSONCodec) skipWS() {
	if c.pos < len(c.data) && c.data[c.pos] > ' ' {
		return // the usual case: no whitespace
	}
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *JSONCodec) value() (any, error) {
	c.skipWS()
	if c.pos >= len(c.data) {
		return nil, c.errEOF()
	}
	switch b := c.data[c.pos]; b {
	case '{':
		m, err := c.object(0)
		if err != nil {
			return nil, err
		}
		return m, nil
	case '[':
		return c.array()
	case '"':
		if c.ar != nil {
			return c.arenaString()
		}
		s, err := c.stringValue()
		if err != nil {
			return nil, err
		}
		return s, nil
	case 't':
		return true, c.literal("true")
	case 'f':
		return false, c.literal("false")
	case 'n':
		return nil, c.literal("null")
	default:
		if b == '-' || (b >= '0' && b <= '9') {
			return c.number()
		}
	}
	return nil, c.errChar("looking for beginning of value")
}

func (c *JSONCodec) literal(lit string) error {
	if len(c.data)-c.pos >= len(lit) && string(c.data[c.pos:c.pos+len(lit)]) == lit {
		c.pos += len(lit)
		return nil
	}
	for i := 0; i < len(lit); i++ {
		if c.pos >= len(c.data) {
			return c.errEOF()
		}
		if c.data[c.pos] != lit[i] {
			return c.errChar("in literal " + lit + " (expecting " + quoteChar(lit[i]) + ")")
		}
		c.pos++
	}
	return nil
}

func (c *JSONCodec) object(hint int) (map[string]any, error) {
	m := make(map[string]any, hint)
	err := c.members(func(_ int, k string, v any) { m[k] = v })
	if err != nil {
		return nil, err
	}
	return m, nil
}

// members decodes the object at c.pos (its opening brace), calling set for
// each member in order with its position, its interned key and its value.
func (c *JSONCodec) members(set func(idx int, k string, v any)) error {
	c.depth++
	if c.depth > maxDepth {
		return &SyntaxError{Msg: "exceeded max depth", Offset: c.pos}
	}
	c.pos++ // '{'
	idx := 0
	c.skipWS()
	if c.pos < len(c.data) && c.data[c.pos] == '}' {
		c.pos++
		c.depth--
		return nil
	}
	for {
		c.skipWS()
		if c.pos >= len(c.data) {
			return c.errEOF()
		}
		if c.data[c.pos] != '"' {
			return c.errChar("looking for beginning of object key string")
		}
		k, err := c.key(idx)
		if err != nil {
			return err
		}
		c.skipWS()
		if c.pos >= len(c.data) {
			return c.errEOF()
		}
		if c.data[c.pos] != ':' {
			return c.errChar("after object key")
		}
		c.pos++
		v, err := c.value()
		if err != nil {
			return err
		}
		set(idx, k, v)
		idx++
		c.skipWS()
		if c.pos >= len(c.data) {
			return c.errEOF()
		}
		switch c.data[c.pos] {
		case ',':
			c.pos++
		case '}':
			c.pos++
			c.depth--
			return nil
		default:
			return c.errChar("after object key:value pair")
		}
	}
}

func (c *JSONCodec) array() (any, error) {
	c.depth++
	if c.depth > maxDepth {
		return nil, &SyntaxError{Msg: "exceeded max depth", Offset: c.pos}
	}
	c.pos++ // '['
	base := len(c.stack)
	c.skipWS()
	if c.pos < len(c.data) && c.data[c.pos] == ']' {
		c.pos++
		c.depth--
		return []any{}, nil
	}
	for {
		v, err := c.value()
		if err != nil {
			c.clearStack(base)
			return nil, err
		}
		c.stack = append(c.stack, v)
		c.skipWS()
		if c.pos >= len(c.data) {
			c.clearStack(base)
			return nil, c.errEOF()
		}
		switch c.data[c.pos] {
		case ',':
			c.pos++
		case ']':
			c.pos++
			c.depth--
			out := make([]any, len(c.stack)-base)
			copy(out, c.stack[base:])
			c.clearStack(base)
			return out, nil
		default:
			c.clearStack(base)
			return nil, c.errChar("after array element")
		}
	}
}

// clearStack pops the stack to base, dropping references so decoded values
// are not retained by the codec.
func (c *JSONCodec) clearStack(base int) {
	clear(c.stack[base:])
	c.stack = c.stack[:base]
}

// plainByte marks the bytes a string may hold as they are: printable ASCII
// other than '"' and '\\'. A string of plain bytes needs no unescaping and
// no UTF-8 check.
var plainByte = func() (t [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// scanString scans the string starting at the opening quote at c.pos. For a
// string without escapes or invalid UTF-8 it returns the content bounds and
// simple=true, leaving c.pos after the closing quote. Otherwise it returns
// simple=false with c.pos unchanged.
func (c *JSONCodec) scanString() (start, end int, simple bool, err error) {
	start = c.pos + 1
	data := c.data
	i := start
	for {
		for i < len(data) && plainByte[data[i]] {
			i++
		}
		if i >= len(data) {
			break
		}
		switch b := data[i]; {
		case b == '"':
			c.pos = i + 1
			return start, i, true, nil
		case b == '\\':
			return 0, 0, false, nil
		case b < 0x20:
			c.pos = i
			return 0, 0, false, c.errChar("in string literal")
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, 0, false, nil
			}
			i += size
		}
	}
	c.pos = len(data)
	return 0, 0, false, c.errEOF()
}
