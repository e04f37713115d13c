package format

import (
	"fmt"
	"net/url"

	"github.com/rekuiper/rekuiper/internal/value"
)

// urlCodec handles application/x-www-form-urlencoded payloads.
type urlCodec struct{}

// Decode returns one record: a key with one value maps to that string, a
// repeated key to an array of its strings.
func (urlCodec) Decode(payload []byte) ([]map[string]any, error) {
	vals, err := url.ParseQuery(string(payload))
	if err != nil {
		return nil, fmt.Errorf("decode urlencoded: %w", err)
	}
	m := make(map[string]any, len(vals))
	for k, vs := range vals {
		if len(vs) == 1 {
			m[k] = vs[0]
			continue
		}
		arr := make([]any, len(vs))
		for i, s := range vs {
			arr[i] = s
		}
		m[k] = arr
	}
	return []map[string]any{m}, nil
}

// Encode encodes an emission of exactly one row.
func (c urlCodec) Encode(rows []map[string]any) ([]byte, error) {
	if len(rows) != 1 {
		return nil, fmt.Errorf("encode urlencoded: need exactly one row, got %d (set sendSingle)", len(rows))
	}
	return c.EncodeRow(rows[0])
}

// EncodeRow encodes a row with keys sorted; array values repeat their key,
// other values are written in their string form.
func (urlCodec) EncodeRow(row map[string]any) ([]byte, error) {
	form := make(url.Values, len(row))
	for k, v := range row {
		if arr, ok := v.([]any); ok {
			for _, e := range arr {
				form.Add(k, value.ToString(e))
			}
			continue
		}
		form.Set(k, value.ToString(v))
	}
	return []byte(form.Encode()), nil
}

// EncodeValue encodes an object.
func (c urlCodec) EncodeValue(v any) ([]byte, error) {
	if m, ok := v.(map[string]any); ok {
		return c.EncodeRow(m)
	}
	return nil, fmt.Errorf("encode urlencoded: unsupported value of type %s, expected an object", value.TypeName(v))
}
