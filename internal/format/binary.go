package format

import (
	"fmt"
	"slices"

	"github.com/rekuiper/rekuiper/internal/value"
)

// binaryCodec passes payloads through as bytes. Decoding puts the whole
// payload under one field; encoding needs a single bytes (or string) value.
type binaryCodec struct {
	field string
}

// Decode returns one record holding a copy of payload under the codec's
// field name ("self" unless the stream schema names its one BYTEA field).
func (c binaryCodec) Decode(payload []byte) ([]map[string]any, error) {
	return []map[string]any{{c.field: slices.Clone(payload)}}, nil
}

// Encode encodes an emission of exactly one row; see EncodeRow.
func (c binaryCodec) Encode(rows []map[string]any) ([]byte, error) {
	if len(rows) != 1 {
		return nil, fmt.Errorf("encode binary: need exactly one row, got %d (set sendSingle or dataField)", len(rows))
	}
	return c.EncodeRow(rows[0])
}

// EncodeRow encodes a row with exactly one field whose value is bytes or a
// string: the payload is that value.
func (c binaryCodec) EncodeRow(row map[string]any) ([]byte, error) {
	if len(row) == 1 {
		for _, v := range row {
			return c.EncodeValue(v)
		}
	}
	return nil, fmt.Errorf("encode binary: need a row with exactly one field, got %d fields", len(row))
}

// EncodeValue encodes bytes or a string as themselves, or a one-field row.
func (c binaryCodec) EncodeValue(v any) ([]byte, error) {
	switch x := v.(type) {
	case []byte:
		return slices.Clone(x), nil
	case string:
		return []byte(x), nil
	case map[string]any:
		return c.EncodeRow(x)
	}
	return nil, fmt.Errorf("encode binary: unsupported value of type %s, expected bytes or string", value.TypeName(v))
}
