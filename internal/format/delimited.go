package format

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rekuiper/rekuiper/internal/value"
)

// delimitedCodec handles delimiter-separated lines. Values are not quoted:
// a value containing the delimiter or a newline is written as is.
type delimitedCodec struct {
	delim  string
	cols   []string
	header bool
}

// Decode returns one record per non-empty line. Columns are named after
// the schema fields in order (extra columns are dropped), or col0, col1, ...
// without a schema. Values are strings; the stream schema casts them.
func (c *delimitedCodec) Decode(payload []byte) ([]map[string]any, error) {
	var out []map[string]any
	for line := range bytes.SplitSeq(payload, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			continue
		}
		tokens := strings.Split(string(line), c.delim)
		m := make(map[string]any, len(tokens))
		for i, t := range tokens {
			switch {
			case len(c.cols) == 0:
				m["col"+strconv.Itoa(i)] = t
			case i < len(c.cols):
				m[c.cols[i]] = t
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// Encode writes one line per row, joined by newlines, preceded by a header
// line when configured. Columns are the configured fields in order, or the
// sorted keys of the first row.
func (c *delimitedCodec) Encode(rows []map[string]any) ([]byte, error) {
	cols := c.cols
	if len(cols) == 0 && len(rows) > 0 {
		cols = sortedKeys(rows[0])
	}
	var b bytes.Buffer
	if c.header && len(cols) > 0 {
		b.WriteString(strings.Join(cols, c.delim))
		if len(rows) > 0 {
			b.WriteByte('\n')
		}
	}
	for i, r := range rows {
		if i > 0 {
			b.WriteByte('\n')
		}
		for j, col := range cols {
			if j > 0 {
				b.WriteString(c.delim)
			}
			b.WriteString(value.ToString(r[col]))
		}
	}
	return b.Bytes(), nil
}

// EncodeRow writes one line (after the header line when configured).
func (c *delimitedCodec) EncodeRow(row map[string]any) ([]byte, error) {
	return c.Encode([]map[string]any{row})
}

// EncodeValue encodes an object or an array of objects.
func (c *delimitedCodec) EncodeValue(v any) ([]byte, error) {
	switch x := v.(type) {
	case map[string]any:
		return c.EncodeRow(x)
	case []map[string]any:
		return c.Encode(x)
	case []any:
		rows := make([]map[string]any, len(x))
		for i, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("encode delimited: array element %d is %s, expected an object", i, value.TypeName(e))
			}
			rows[i] = m
		}
		return c.Encode(rows)
	}
	return nil, fmt.Errorf("encode delimited: unsupported value of type %s, expected an object or array of objects", value.TypeName(v))
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
