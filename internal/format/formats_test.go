package format

import (
	"reflect"
	"testing"
	"time"
)

func TestNew(t *testing.T) {
	tests := []struct {
		format  string
		opts    Options
		wantErr string
	}{
		{format: "json"},
		{format: "JSON"},
		{format: ""},
		{format: "binary"},
		{format: "delimited", opts: Options{Delimiter: "|"}},
		{format: "urlencoded"},
		{format: "binary", opts: Options{Fields: []string{"a", "b"}}, wantErr: "format binary: at most one field allowed, got 2"},
		{format: "protobuf", opts: Options{SchemaID: "s.M"}, wantErr: `format protobuf: no schema registry to resolve SCHEMAID "s.M"`},
		{format: "protobuf", wantErr: `format protobuf needs a schema id (SCHEMAID of a stream, schemaId of a sink): "schema.Message"`},
		{format: "custom", opts: Options{SchemaID: "s.M"}, wantErr: `format "custom" is not supported (schema "s.M"): custom formats need native plugins`},
		{format: "xml", wantErr: `unknown format "xml"`},
	}
	for _, tt := range tests {
		t.Run(tt.format+tt.wantErr, func(t *testing.T) {
			c, err := New(tt.format, tt.opts)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("New(%q) error = %v, want %q", tt.format, err, tt.wantErr)
				}
				return
			}
			if err != nil || c == nil {
				t.Fatalf("New(%q) = %v, %v", tt.format, c, err)
			}
		})
	}
}

func mustNew(t *testing.T, format string, opts Options) Codec {
	t.Helper()
	c, err := New(format, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDecodeOtherFormats(t *testing.T) {
	tests := []struct {
		name    string
		format  string
		opts    Options
		in      string
		want    []map[string]any
		wantErr string
	}{
		{name: "binary self", format: "binary", in: "\x00\x01raw",
			want: []map[string]any{{"self": []byte("\x00\x01raw")}}},
		{name: "binary schema field", format: "binary", opts: Options{Fields: []string{"image"}}, in: "png",
			want: []map[string]any{{"image": []byte("png")}}},
		{name: "delimited default", format: "delimited", in: "a,1,,x y",
			want: []map[string]any{{"col0": "a", "col1": "1", "col2": "", "col3": "x y"}}},
		{name: "delimited schema", format: "delimited", opts: Options{Delimiter: ";", Fields: []string{"id", "name"}}, in: "7;dev;extra",
			want: []map[string]any{{"id": "7", "name": "dev"}}},
		{name: "delimited short row", format: "delimited", opts: Options{Fields: []string{"id", "name"}}, in: "7",
			want: []map[string]any{{"id": "7"}}},
		{name: "delimited lines", format: "delimited", in: "a,b\r\nc,d\n\n",
			want: []map[string]any{{"col0": "a", "col1": "b"}, {"col0": "c", "col1": "d"}}},
		{name: "delimited multi-char delimiter", format: "delimited", opts: Options{Delimiter: "||"}, in: "a||b|c",
			want: []map[string]any{{"col0": "a", "col1": "b|c"}}},
		{name: "urlencoded", format: "urlencoded", in: "a=1&b=x+y&b=z&c=%26",
			want: []map[string]any{{"a": "1", "b": []any{"x y", "z"}, "c": "&"}}},
		{name: "urlencoded bad escape", format: "urlencoded", in: "a=%zz", wantErr: `decode urlencoded: invalid URL escape "%zz"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mustNew(t, tt.format, tt.opts).Decode([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decode = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestBinaryDecodeCopies(t *testing.T) {
	buf := []byte("abc")
	rows, err := mustNew(t, "binary", Options{}).Decode(buf)
	if err != nil {
		t.Fatal(err)
	}
	buf[0] = 'X'
	if got := rows[0]["self"].([]byte); string(got) != "abc" {
		t.Errorf("decoded bytes alias the payload: %q", got)
	}
}

func TestEncodeOtherFormats(t *testing.T) {
	ts := time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC)
	rows := []map[string]any{
		{"id": int64(1), "name": "a", "temp": 20.5},
		{"id": int64(2), "name": "b", "temp": nil},
	}
	tests := []struct {
		name    string
		format  string
		opts    Options
		encode  func(c Codec) ([]byte, error)
		want    string
		wantErr string
	}{
		{name: "delimited rows sorted keys", format: "delimited",
			encode: func(c Codec) ([]byte, error) { return c.Encode(rows) }, want: "1,a,20.5\n2,b,"},
		{name: "delimited fields order and header", format: "delimited", opts: Options{Delimiter: "|", Fields: []string{"name", "id"}, HasHeader: true},
			encode: func(c Codec) ([]byte, error) { return c.Encode(rows) }, want: "name|id\na|1\nb|2"},
		{name: "delimited row", format: "delimited",
			encode: func(c Codec) ([]byte, error) {
				return c.EncodeRow(map[string]any{"t": ts, "b": true, "a": []any{int64(1)}})
			}, want: "[1],true,2023-11-14T22:13:20.000Z"},
		{name: "delimited empty", format: "delimited",
			encode: func(c Codec) ([]byte, error) { return c.Encode(nil) }, want: ""},
		{name: "delimited value array", format: "delimited",
			encode: func(c Codec) ([]byte, error) { return c.EncodeValue([]any{map[string]any{"x": int64(1)}}) }, want: "1"},
		{name: "delimited scalar value", format: "delimited",
			encode:  func(c Codec) ([]byte, error) { return c.EncodeValue(int64(1)) },
			wantErr: "encode delimited: unsupported value of type int64, expected an object or array of objects"},
		{name: "binary bytes field", format: "binary",
			encode: func(c Codec) ([]byte, error) { return c.Encode([]map[string]any{{"img": []byte{1, 2}}}) }, want: "\x01\x02"},
		{name: "binary string value", format: "binary",
			encode: func(c Codec) ([]byte, error) { return c.EncodeValue("text") }, want: "text"},
		{name: "binary two rows", format: "binary",
			encode:  func(c Codec) ([]byte, error) { return c.Encode(rows) },
			wantErr: "encode binary: need exactly one row, got 2 (set sendSingle or dataField)"},
		{name: "binary two fields", format: "binary",
			encode:  func(c Codec) ([]byte, error) { return c.EncodeRow(rows[0]) },
			wantErr: "encode binary: need a row with exactly one field, got 3 fields"},
		{name: "binary int", format: "binary",
			encode:  func(c Codec) ([]byte, error) { return c.EncodeValue(int64(3)) },
			wantErr: "encode binary: unsupported value of type int64, expected bytes or string"},
		{name: "urlencoded row", format: "urlencoded",
			encode: func(c Codec) ([]byte, error) {
				return c.EncodeRow(map[string]any{"b": "x y&z", "a": int64(1), "l": []any{"p", int64(2)}, "f": 1.5})
			}, want: "a=1&b=x+y%26z&f=1.5&l=p&l=2"},
		{name: "urlencoded two rows", format: "urlencoded",
			encode:  func(c Codec) ([]byte, error) { return c.Encode(rows) },
			wantErr: "encode urlencoded: need exactly one row, got 2 (set sendSingle)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.encode(mustNew(t, tt.format, tt.opts))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("payload = %q, want %q", got, tt.want)
			}
		})
	}
}
