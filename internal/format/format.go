// Package format decodes source payloads into records and encodes result
// rows into sink payloads, for the stream FORMATs of eKuiper: json, binary,
// delimited, urlencoded and protobuf.
//
// Decoded records hold only value-model types (see internal/value): nil,
// int64, float64, string, bool, []byte, []any and map[string]any. JSON
// integers (no fraction, no exponent, within int64) decode to int64 and every
// other JSON number to float64.
//
// A Codec keeps scratch buffers and a field-name cache between calls, so it
// is not safe for concurrent use: create one per goroutine. Records and
// payloads it returns are owned by the caller and never reused.
package format

import (
	"fmt"
	"strings"

	"github.com/rekuiper/rekuiper/internal/row"
)

// Format names accepted by New (case-insensitive).
const (
	JSON       = "json"
	Binary     = "binary"
	Delimited  = "delimited"
	URLEncoded = "urlencoded"
)

// BinaryField is the field that holds the payload of a binary stream without
// a schema, as in eKuiper.
const BinaryField = "self"

// Decoder turns one payload into zero or more records.
type Decoder interface {
	// Decode returns the records in payload. A JSON array of objects yields
	// one record per element.
	Decode(payload []byte) ([]map[string]any, error)
}

// TupleDecoder is implemented by decoders that build a stream's tuples
// directly, which costs fewer allocations than Decode followed by wrapping
// each record. Like Decode's records, the tuples and values are owned by the
// caller and never reused (unless it says otherwise, see TupleRecycler);
// they are read-only.
type TupleDecoder interface {
	// DecodeTuples appends the records of payload to dst as tuples and
	// returns the extended slice; Emitter, Metadata and Timestamp are left
	// for the caller to set. On error it returns dst unchanged.
	DecodeTuples(dst []*row.Tuple, payload []byte) ([]*row.Tuple, error)
}

// TupleRecycler is implemented by tuple decoders that can reuse the memory
// of the tuples they decoded (see row.Arena). After some DecodeTuples
// calls, the caller ends them with Keep (what they returned may be held by
// anyone: it is never reused) or Recycle (nothing holds or reads any of it
// any more: the next calls reuse it). A caller that calls neither gets
// Keep's behaviour.
type TupleRecycler interface {
	TupleDecoder
	Keep()
	Recycle()
}

// Encoder turns result rows into one payload.
type Encoder interface {
	// Encode encodes the rows of one emission as one payload (a JSON array,
	// delimited lines, ...).
	Encode(rows []map[string]any) ([]byte, error)
	// EncodeRow encodes a single row (sendSingle).
	EncodeRow(row map[string]any) ([]byte, error)
	// EncodeValue encodes any value-model value, as selected by a sink's
	// dataField.
	EncodeValue(v any) ([]byte, error)
}

// Codec decodes and encodes one format.
type Codec interface {
	Decoder
	Encoder
}

// Options configure a Codec.
type Options struct {
	// Delimiter separates delimited columns; default ",".
	Delimiter string
	// Fields are the schema's column names, in order. JSON decoding into
	// tuples puts them in slots (see TupleDecoder). Delimited decoding
	// names columns after them (col0, col1, ... without them) and delimited
	// encoding writes them in this order. A binary stream names its single
	// field after Fields[0] (BinaryField without it).
	Fields []string
	// HasHeader makes delimited encoding write a header line first.
	HasHeader bool
	// SchemaID is the protobuf/custom schema ("schema.Message"), or the
	// JSON schema a JSON stream's records must validate against.
	SchemaID string
	// Schemas resolves SchemaID: the protobuf format's messages, and JSON
	// schemas when it is also a JSONSchemas.
	Schemas Schemas
}

// New returns a Codec for format (case-insensitive). An unknown or
// unsupported format is an error naming it.
func New(format string, opts Options) (Codec, error) {
	switch strings.ToLower(format) {
	case "", JSON:
		if opts.SchemaID != "" {
			return newValidatedJSON(opts)
		}
		return NewJSONStream(opts.Fields), nil
	case Binary:
		if len(opts.Fields) > 1 {
			return nil, fmt.Errorf("format binary: at most one field allowed, got %d", len(opts.Fields))
		}
		name := BinaryField
		if len(opts.Fields) == 1 {
			name = opts.Fields[0]
		}
		return binaryCodec{field: name}, nil
	case Delimited:
		d := opts.Delimiter
		if d == "" {
			d = ","
		}
		return &delimitedCodec{delim: d, cols: opts.Fields, header: opts.HasHeader}, nil
	case URLEncoded:
		return urlCodec{}, nil
	case Protobuf:
		if opts.SchemaID == "" {
			return nil, fmt.Errorf("format protobuf needs a schema id (SCHEMAID of a stream, schemaId of a sink): \"schema.Message\"")
		}
		if opts.Schemas == nil {
			return nil, fmt.Errorf("format protobuf: no schema registry to resolve SCHEMAID %q", opts.SchemaID)
		}
		md, err := opts.Schemas.ProtoMessage(opts.SchemaID)
		if err != nil {
			return nil, fmt.Errorf("format protobuf: %w", err)
		}
		return NewProtobuf(md, opts.Fields), nil
	case "custom":
		return nil, fmt.Errorf("format %q is not supported (schema %q): custom formats need native plugins", format, opts.SchemaID)
	}
	return nil, fmt.Errorf("unknown format %q", format)
}
