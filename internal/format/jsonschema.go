package format

import (
	"fmt"

	"github.com/rekuiper/rekuiper/internal/row"
)

// JSONSchemas is implemented by schema registries that hold JSON schemas
// (internal/schema): the SCHEMAID of a JSON stream names one.
type JSONSchemas interface {
	// JSONValidator returns the check of JSON schema schemaID: it returns
	// an error saying what in payload does not validate. An unknown or
	// broken schema is an error naming it.
	JSONValidator(schemaID string) (func(payload []byte) error, error)
}

var (
	_ TupleDecoder = (*validatedJSON)(nil)
	_ Codec        = (*validatedJSON)(nil)
)

// validatedJSON is the codec of a JSON stream with a SCHEMAID: a payload
// decodes only when its records validate against the JSON schema; one that
// does not is a decode error (counted and reported like malformed JSON).
// Encoding is plain JSON.
type validatedJSON struct {
	*JSONCodec
	validate func([]byte) error
}

func newValidatedJSON(opts Options) (Codec, error) {
	js, ok := opts.Schemas.(JSONSchemas)
	if !ok {
		return nil, fmt.Errorf("format json: no schema registry to resolve SCHEMAID %q", opts.SchemaID)
	}
	validate, err := js.JSONValidator(opts.SchemaID)
	if err != nil {
		return nil, fmt.Errorf("format json: %w", err)
	}
	return &validatedJSON{JSONCodec: NewJSONStream(opts.Fields), validate: validate}, nil
}

// Decode decodes payload, then validates it.
func (c *validatedJSON) Decode(payload []byte) ([]map[string]any, error) {
	recs, err := c.JSONCodec.Decode(payload)
	if err != nil {
		return nil, err
	}
	if err := c.validate(payload); err != nil {
		return nil, err
	}
	return recs, nil
}

// DecodeTuples decodes payload into tuples, then validates it; on error
// dst comes back unchanged.
func (c *validatedJSON) DecodeTuples(dst []*row.Tuple, payload []byte) ([]*row.Tuple, error) {
	out, err := c.JSONCodec.DecodeTuples(dst, payload)
	if err != nil {
		return dst, err
	}
	if err := c.validate(payload); err != nil {
		return dst, err
	}
	return out, nil
}
