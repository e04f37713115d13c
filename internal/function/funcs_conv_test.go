package function

import (
	"bytes"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

func TestConvCorpus(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatalf("load zone: %v", err)
	}
	cases := []mathCase{
		// cast_bigint
		{"cast_bigint", "cast", []any{3.7, "bigint"}, int64(3), ""},
		{"cast_bigint", "cast", []any{"42", "bigint"}, int64(42), ""},
		{"cast_bigint", "cast", []any{true, "bigint"}, int64(1), ""},
		{"cast_bigint", "cast", []any{-2.2, "bigint"}, int64(-2), ""},
		{"cast_bigint", "cast", []any{int64(7), "bigint"}, int64(7), ""},
		// cast_boolean
		{"cast_boolean", "cast", []any{int64(1), "boolean"}, true, ""},
		{"cast_boolean", "cast", []any{int64(0), "boolean"}, false, ""},
		{"cast_boolean", "cast", []any{"true", "boolean"}, true, ""},
		{"cast_boolean", "cast", []any{"false", "boolean"}, false, ""},
		{"cast_boolean", "cast", []any{"1", "boolean"}, true, ""},
		{"cast_boolean", "cast", []any{0.0, "boolean"}, false, ""},
		// cast_bytea: strings become their bytes (no base64 decoding).
		{"cast_bytea", "cast", []any{"hello", "bytea"}, []byte("hello"), ""},
		{"cast_bytea", "cast", []any{"aGk=", "bytea"}, []byte("hi"), ""}, // valid base64 is decoded, as in eKuiper
		// cast_datetime_format: the datetime that format_time then renders.
		{"cast_datetime_format", "cast", []any{int64(1700000000000), "datetime"},
			time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC), ""},
		{"cast_datetime_format", "cast", []any{"2023-01-02 03:04:05", "datetime"},
			time.Date(2023, 1, 2, 3, 4, 5, 0, time.UTC), ""},
		{"cast_datetime_format", "cast", []any{int64(86400000), "datetime"},
			time.Date(1970, 1, 2, 0, 0, 0, 0, time.UTC), ""},
		// cast_datetime_to_string. QUIRK: eKuiper gives Go's time.String()
		// ("2023-11-14 22:13:20.123 +0000 UTC"); rekuiper uses the default
		// datetime layout.
		{"cast_datetime_to_string", "cast", []any{time.UnixMilli(1700000000123).UTC(), "string"}, "2023-11-14T22:13:20.123Z", ""},
		// cast_float
		{"cast_float", "cast", []any{int64(3), "float"}, 3.0, ""},
		{"cast_float", "cast", []any{"2.5", "float"}, 2.5, ""},
		{"cast_float", "cast", []any{false, "float"}, 0.0, ""},
		{"cast_float", "cast", []any{1.25, "float"}, 1.25, ""},
		// cast_string. QUIRK: eKuiper renders arrays/objects with Go's fmt
		// ("[1 2]", "map[a:1]"); rekuiper writes JSON.
		{"cast_string", "cast", []any{int64(3), "string"}, "3", ""},
		{"cast_string", "cast", []any{2.5, "string"}, "2.5", ""},
		{"cast_string", "cast", []any{true, "string"}, "true", ""},
		{"cast_string", "cast", []any{"str", "string"}, "str", ""},
		{"cast_string", "cast", []any{[]any{int64(1), int64(2)}, "string"}, "[1,2]", ""},
		{"cast_string", "cast", []any{map[string]any{"a": int64(1)}, "string"}, `{"a":1}`, ""},
		// chr. QUIRK: eKuiper returns the code point as an integer (65);
		// rekuiper returns the one-character string.
		{"chr", "chr", []any{int64(65)}, "A", ""},
		{"chr", "chr", []any{int64(97)}, "a", ""},
		{"chr", "chr", []any{int64(48)}, "0", ""},
		{"chr", "chr", []any{"B"}, "B", ""},
		// dec2hex_forms. QUIRK: eKuiper writes -1 as "0x-1"; rekuiper "-0x1".
		{"dec2hex_forms", "dec2hex", []any{int64(-1)}, "-0x1", ""},
		{"dec2hex_forms", "dec2hex", []any{int64(4096)}, "0x1000", ""},
		{"dec2hex_forms", "dec2hex", []any{15.5}, nil, "cannot convert float64(15.5) to int"},
		// decode_invalid
		{"decode_invalid", "decode", []any{"aGk=", "base64"}, []byte("hi"), ""},
		{"decode_invalid", "decode", []any{"!!notbase64", "base64"}, nil,
			"fail to decode base64 string: illegal base64 data at input byte 0"},
		// decompress_invalid
		{"decompress_invalid", "decompress", []any{"not compressed", "zlib"}, nil,
			"failed to decompress: zlib: invalid header"},
		// encode_non_string
		{"encode_non_string", "encode", []any{int64(12), "base64"}, nil, "Only string type can be encoded."},
		{"encode_non_string", "encode", []any{"ok", "base64"}, "b2s=", ""},
		// hex2dec_big
		{"hex2dec_big", "hex2dec", []any{"0x7fffffffffffffff"}, int64(9223372036854775807), ""},
		{"hex2dec_big", "hex2dec", []any{"0xffffffffffffffff"}, nil, "invalid hexadecimal value: ffffffffffffffff"},
		// to_seconds
		{"to_seconds", "to_seconds", []any{int64(1700000000123)}, int64(1700000000), ""},
		{"to_seconds", "to_seconds", []any{"2023-11-14 22:13:20"}, int64(1700000000), ""},
		// trunc_negative. QUIRK: eKuiper rounds (-2.0, 2.0); rekuiper
		// truncates toward zero.
		{"trunc_negative", "trunc", []any{-1.99, int64(1)}, -1.9, ""},
		{"trunc_negative", "trunc", []any{1.95, int64(1)}, 1.9, ""},
		// gen_func_datetime/to_seconds_forms
		{"to_seconds_forms", "to_seconds", []any{int64(999)}, int64(0), ""},
		{"to_seconds_forms", "to_seconds", []any{"1970-01-01 00:00:59"}, int64(59), ""},
		// gen_func_datetime/convert_tz: the zone changes, the instant does not.
		{"convert_tz", "convert_tz", []any{int64(1700000000123), "Asia/Shanghai"}, time.UnixMilli(1700000000123).In(shanghai), ""},
		{"convert_tz", "convert_tz", []any{int64(1700000000123), "UTC"}, time.UnixMilli(1700000000123).UTC(), ""},
		{"convert_tz", "convert_tz", []any{int64(0), "Asia/Shanghai"}, time.UnixMilli(0).In(shanghai), ""},
		{"convert_tz", "convert_tz", []any{int64(0), "UTC"}, time.UnixMilli(0).UTC(), ""},
	}
	mathRunCases(t, cases)

	t.Run("convert_tz/wall_clock", func(t *testing.T) {
		d, _ := Builtins().Lookup("convert_tz")
		v, err := d.Scalar(mathTestEnv{}, []any{int64(1700000000123), "Asia/Shanghai"})
		if err != nil {
			t.Fatal(err)
		}
		if got := v.(time.Time).Format("2006-01-02 15:04"); got != "2023-11-15 06:13" {
			t.Fatalf("convert_tz wall clock = %s, want 2023-11-15 06:13", got)
		}
	})
}

func TestConvCompressRoundTrip(t *testing.T) {
	reg := Builtins()
	comp, _ := reg.Lookup("compress")
	decomp, _ := reg.Lookup("decompress")
	// compress_roundtrip covers zlib, gzip and flate; zstd is supported too.
	for _, method := range []string{"zlib", "gzip", "flate", "zstd"} {
		for _, in := range []string{"hello hello hello", "x", ""} {
			t.Run(method+"/"+in, func(t *testing.T) {
				c, err := comp.Scalar(mathTestEnv{}, []any{in, method})
				if err != nil {
					t.Fatalf("compress: %v", err)
				}
				cb, ok := c.([]byte)
				if !ok {
					t.Fatalf("compress returned %T, want []byte", c)
				}
				out, err := decomp.Scalar(mathTestEnv{}, []any{cb, method})
				if err != nil {
					t.Fatalf("decompress: %v", err)
				}
				if !bytes.Equal(out.([]byte), []byte(in)) {
					t.Fatalf("round trip = %q, want %q", out, in)
				}
			})
		}
	}
	errCases := []mathCase{
		{"compress", "compress", []any{"x", "lz4"}, nil, "unsupported compression method lz4"},
		{"compress", "compress", []any{int64(1), "zlib"}, nil, "require string or bytea parameter"},
		{"compress", "compress", []any{nil, "zlib"}, nil, ""},
		{"compress", "compress", []any{nil, nil}, nil, ""},
		// As in eKuiper (diff_funcs/compress_nil_args): the payload's type is
		// checked before the method, and a null method is an error.
		{"compress", "compress", []any{1.5, nil}, nil, "require string or bytea parameter"},
		{"compress", "compress", []any{"x", nil}, nil, "the method is null"},
		{"decompress", "decompress", []any{true, nil}, nil, "require string or bytea parameter"},
		{"decompress", "decompress", []any{[]byte("x"), nil}, nil, "the method is null"},
		{"decompress", "decompress", []any{[]byte("junk"), "gzip"}, nil, "failed to decompress"},
		{"decompress", "decompress", []any{[]byte("junk"), "zstd"}, nil, "failed to decompress"},
	}
	mathRunCases(t, errCases)
}

func TestConvBehaviour(t *testing.T) {
	cases := []mathCase{
		{"cast", "cast", []any{nil, "bigint"}, nil, ""},
		{"cast", "cast", []any{"abc", "bigint"}, nil, "cannot convert string(abc) to int64"},
		{"cast", "cast", []any{int64(1), "bytea"}, nil, "cannot convert int64(1) to bytea"},
		{"cast", "cast", []any{int64(1), "decimal"}, nil, "unknown cast type"},
		{"cast", "cast", []any{time.UnixMilli(5), "bigint"}, int64(5), ""},
		{"convert_tz", "convert_tz", []any{int64(0), "Nowhere/City"}, nil, "time zone"},
		{"convert_tz", "convert_tz", []any{nil, "UTC"}, nil, ""},
		{"to_seconds", "to_seconds", []any{"not a time"}, nil, "cannot convert"},
		{"encode", "encode", []any{[]byte("hi"), "base64"}, "aGk=", ""},
		{"encode", "encode", []any{"hi", "hex"}, nil, "Only base64 encoding is supported."},
		{"decode", "decode", []any{int64(1), "base64"}, nil, "Only string type can be decoded."},
		{"trunc", "trunc", []any{0.29, int64(2)}, 0.29, ""},
		{"trunc", "trunc", []any{1.2345, int64(0)}, 1.0, ""},
		{"trunc", "trunc", []any{int64(5), int64(1)}, 5.0, ""},
		{"trunc", "trunc", []any{1234.5, int64(-2)}, 1200.0, ""},
		{"trunc", "trunc", []any{1.5, 1.5}, nil, "2nd parameter must be int"},
		{"trunc", "trunc", []any{"1.5", int64(1)}, nil, "cannot convert string(1.5) to float64"},
		{"chr", "chr", []any{int64(0x4e2d)}, "中", ""},
		{"chr", "chr", []any{int64(-1)}, nil, "not a valid code point"},
		{"chr", "chr", []any{"AB"}, nil, "single character"},
		{"chr", "chr", []any{true}, nil, "only bigint, float and string"},
		{"hex2dec", "hex2dec", []any{"ff"}, int64(255), ""},
		{"hex2dec", "hex2dec", []any{"-0x1"}, int64(-1), ""},
		{"hex2dec", "hex2dec", []any{"0x"}, nil, "invalid hexadecimal value"},
		{"hex2dec", "hex2dec", []any{"0x-1"}, nil, "invalid hexadecimal value"},
		{"hex2dec", "hex2dec", []any{int64(1)}, nil, "expects a string"},
		{"dec2hex", "dec2hex", []any{int64(255)}, "0xff", ""},
		{"dec2hex", "dec2hex", []any{16.0}, "0x10", ""},
		{"dec2hex", "dec2hex", []any{int64(-9223372036854775808)}, "-0x8000000000000000", ""},
		{"dec2hex", "dec2hex", []any{nil}, nil, ""},
	}
	mathRunCases(t, cases)
}

func TestConvValidate(t *testing.T) {
	f := &ast.FieldRef{Name: "x"}
	lit := func(s string) ast.Expr { return &ast.StringLit{Val: s} }
	tests := []validateCase{
		{"cast bigint", "cast", []ast.Expr{f, lit("bigint")}, false},
		{"cast bytea", "cast", []ast.Expr{f, lit("bytea")}, false},
		{"cast unknown", "cast", []ast.Expr{f, lit("int")}, true},
		{"cast number", "cast", []ast.Expr{f, &ast.IntegerLit{Val: 1}}, true},
		{"cast field type", "cast", []ast.Expr{f, f}, false},
		{"convert_tz ok", "convert_tz", []ast.Expr{f, lit("Europe/Paris")}, false},
		{"convert_tz local", "convert_tz", []ast.Expr{f, lit("Local")}, false},
		{"convert_tz bad", "convert_tz", []ast.Expr{f, lit("Mars/Base")}, true},
		{"encode base64", "encode", []ast.Expr{f, lit("base64")}, false},
		{"encode hex", "encode", []ast.Expr{f, lit("hex")}, true},
		{"decode number", "decode", []ast.Expr{&ast.IntegerLit{Val: 1}, lit("base64")}, true},
		{"compress zstd", "compress", []ast.Expr{f, lit("zstd")}, false},
		{"decompress lz4", "decompress", []ast.Expr{f, lit("lz4")}, true},
		{"trunc float digits", "trunc", []ast.Expr{f, &ast.NumberLit{Val: 1.5}}, true},
		{"chr float", "chr", []ast.Expr{&ast.NumberLit{Val: 1.5}}, true},
		{"dec2hex string", "dec2hex", []ast.Expr{lit("1")}, true},
		{"hex2dec number", "hex2dec", []ast.Expr{&ast.IntegerLit{Val: 1}}, true},
	}
	runValidateCases(t, tests)
}
