package format

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDecodeJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []map[string]any
	}{
		{"flat", `{"id":1,"temp":23.5,"name":"dev1","ok":true,"none":null}`,
			[]map[string]any{{"id": int64(1), "temp": 23.5, "name": "dev1", "ok": true, "none": nil}}},
		{"whitespace", " \t\r\n{ \"a\" : 1 , \"b\" : [ 1 , 2 ] }\n ",
			[]map[string]any{{"a": int64(1), "b": []any{int64(1), int64(2)}}}},
		{"ints stay ints", `{"a":0,"b":-0,"c":9223372036854775807,"d":-9223372036854775808,"e":300}`,
			[]map[string]any{{"a": int64(0), "b": int64(0), "c": int64(math.MaxInt64), "d": int64(math.MinInt64), "e": int64(300)}}},
		{"floats", `{"a":3.0,"b":1e2,"c":-2.5E-3,"d":0.1,"e":1E+2}`,
			[]map[string]any{{"a": 3.0, "b": 100.0, "c": -2.5e-3, "d": 0.1, "e": 100.0}}},
		{"int overflow becomes float", `{"a":9223372036854775808,"b":-9223372036854775809,"c":123456789012345678901234567890}`,
			[]map[string]any{{"a": 9223372036854775808.0, "b": -9223372036854775809.0, "c": 1.2345678901234568e29}}},
		{"nested", `{"a":{"b":{"c":[1,{"d":"x"},[]]}},"e":{}}`,
			[]map[string]any{{"a": map[string]any{"b": map[string]any{"c": []any{int64(1), map[string]any{"d": "x"}, []any{}}}}, "e": map[string]any{}}}},
		{"array of objects", `[{"a":1},{"a":2.5}]`,
			[]map[string]any{{"a": int64(1)}, {"a": 2.5}}},
		{"empty array", `[]`, []map[string]any{}},
		{"escapes", `{"s":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00","k\u0065y":1}`,
			[]map[string]any{{"s": "a\"b\\c/d\b\f\n\r\t\u00e9\U0001F600", "key": int64(1)}}},
		{"lone surrogate", `{"s":"\ud800x"}`, []map[string]any{{"s": "\ufffdx"}}},
		{"invalid utf8 replaced", "{\"s\":\"a\xffb\"}", []map[string]any{{"s": "a\ufffdb"}}},
		{"utf8 kept", `{"s":"héllo 世界"}`, []map[string]any{{"s": "héllo 世界"}}},
		{"duplicate key last wins", `{"a":1,"a":2}`, []map[string]any{{"a": int64(2)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewJSON().Decode([]byte(tt.in))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decode = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestDecodeJSONErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{``, "decode json: unexpected end of JSON input at offset 0"},
		{`{"id":1,"temp":`, "decode json: unexpected end of JSON input at offset 15"},
		{`{"a":1`, "decode json: unexpected end of JSON input at offset 6"},
		{`{"a" 1}`, "decode json: invalid character '1' after object key at offset 5"},
		{`{"a":1 "b":2}`, "decode json: invalid character '\"' after object key:value pair at offset 7"},
		{`{a:1}`, "decode json: invalid character 'a' looking for beginning of object key string at offset 1"},
		{`{"a":x}`, "decode json: invalid character 'x' looking for beginning of value at offset 5"},
		{`{"a":tru}`, "decode json: invalid character '}' in literal true (expecting 'e') at offset 8"},
		{`{"a":[1 2]}`, "decode json: invalid character '2' after array element at offset 8"},
		{`{"a":01}`, "decode json: invalid character '1' after object key:value pair at offset 6"},
		{`{"a":1.}`, "decode json: invalid character '}' after decimal point in numeric literal at offset 7"},
		{`{"a":1e}`, "decode json: invalid character '}' in exponent of numeric literal at offset 7"},
		{`{"a":-}`, "decode json: invalid character '}' in numeric literal at offset 6"},
		{`{"a":1e400}`, "decode json: number 1e400 is out of range at offset 5"},
		{"{\"a\":\"x\ny\"}", "decode json: invalid character '\\n' in string literal at offset 7"},
		{`{"a":"\x"}`, "decode json: invalid character 'x' in string escape code at offset 7"},
		{`{"a":"\u12G4"}`, "decode json: invalid character 'G' in \\u hexadecimal character escape at offset 10"},
		{`{"a":1}}`, "decode json: invalid character '}' after top-level value at offset 7"},
		{`[{"a":1},2]`, "decode json: array element 1 is a number, expected an object at offset 0"},
		{`"str"`, "decode json: expected an object or an array of objects, found a string at offset 0"},
		{`null`, "decode json: expected an object or an array of objects, found null at offset 0"},
		{strings.Repeat(`{"a":`, 1001), "decode json: exceeded max depth at offset 5000"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := NewJSON().Decode([]byte(tt.in))
			if err == nil {
				t.Fatalf("Decode(%q) succeeded, want error %q", tt.in, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q, want %q", err, tt.want)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Errorf("error %T is not a *SyntaxError", err)
			}
		})
	}
}

func TestDecodeJSONReuse(t *testing.T) {
	c := NewJSON()
	payload := []byte(`{"name":"a","v":1}`)
	first, err := c.Decode(payload)
	if err != nil {
		t.Fatal(err)
	}
	copy(payload, `{"name":"b","v":2}`)
	second, err := c.Decode(payload)
	if err != nil {
		t.Fatal(err)
	}
	if first[0]["name"] != "a" || second[0]["name"] != "b" {
		t.Errorf("values alias the payload buffer: first=%v second=%v", first, second)
	}
	if _, err := c.Decode([]byte(`{"x":`)); err == nil {
		t.Fatal("want error")
	}
	third, err := c.Decode([]byte(`{"y":[1,[2]]}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{int64(1), []any{int64(2)}}; !reflect.DeepEqual(third[0]["y"], want) {
		t.Errorf("after an error, Decode = %v, want %v", third[0]["y"], want)
	}
}

func TestDecodeJSONKeyCaches(t *testing.T) {
	c := NewJSON()
	inputs := []struct {
		in   string
		want map[string]any
	}{
		{`{"a":1,"b":2}`, map[string]any{"a": int64(1), "b": int64(2)}},
		{`{"b":3,"a":4}`, map[string]any{"a": int64(4), "b": int64(3)}},
		{`{"a":5,"b":6,"c":7}`, map[string]any{"a": int64(5), "b": int64(6), "c": int64(7)}},
		{`{"\u0061":8}`, map[string]any{"a": int64(8)}},
		{`{"ab":9}`, map[string]any{"ab": int64(9)}},
		{`{"x":{"a":1,"b":{"a":2}}}`, map[string]any{"x": map[string]any{"a": int64(1), "b": map[string]any{"a": int64(2)}}}},
	}
	for _, in := range inputs {
		got, err := c.Decode([]byte(in.in))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[0], in.want) {
			t.Errorf("Decode(%s) = %v, want %v", in.in, got[0], in.want)
		}
	}
}

func TestDecodeJSONLargePayload(t *testing.T) {
	big := strings.Repeat("x", 5000)
	got, err := NewJSON().Decode([]byte(`{"s":"` + big + `","t":"short"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got[0]["s"] != big || got[0]["t"] != "short" {
		t.Errorf("large payload decoded wrong: t=%q len(s)=%d", got[0]["t"], len(got[0]["s"].(string)))
	}
}

func TestEncodeJSON(t *testing.T) {
	ts := time.Date(2023, 11, 14, 22, 13, 20, 123000000, time.UTC)
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"sorted keys", map[string]any{"b": int64(1), "a": "x", "c": nil}, `{"a":"x","b":1,"c":null}`},
		{"int and float", map[string]any{"i": int64(-42), "f": 3.0, "g": 25.5, "h": 1e21, "k": 1e-7, "z": 0.0},
			`{"f":3,"g":25.5,"h":1e+21,"i":-42,"k":1e-7,"z":0}`},
		{"bytes", map[string]any{"b": []byte("hi!"), "n": []byte(nil)}, `{"b":"aGkh","n":null}`},
		{"datetime", map[string]any{"t": ts}, `{"t":"2023-11-14T22:13:20.123Z"}`},
		{"nested", map[string]any{"a": []any{int64(1), map[string]any{"y": true, "x": false}}, "e": []any{}, "n": []any(nil)},
			`{"a":[1,{"x":false,"y":true}],"e":[],"n":null}`},
		{"escapes", "a\"\\\n\r\t\b\f\x01<>&\u2028é\xff", `"a\"\\\n\r\t\b\f\u0001<>&\u2028é\ufffd"`},
		{"foreign type", []int{1, 2}, `[1,2]`},
		{"nil map", map[string]any(nil), `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewJSON().EncodeValue(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("EncodeValue = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestEncodeJSONRowsAndErrors(t *testing.T) {
	c := NewJSON()
	rows := []map[string]any{{"a": int64(1)}, {"error": "boom"}}
	got, err := c.Encode(rows)
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"a":1},{"error":"boom"}]`; string(got) != want {
		t.Errorf("Encode = %s, want %s", got, want)
	}
	got2, err := c.Encode(nil)
	if err != nil || string(got2) != "[]" {
		t.Errorf("Encode(nil) = %s, %v; want []", got2, err)
	}
	if string(got) != `[{"a":1},{"error":"boom"}]` {
		t.Errorf("a later Encode overwrote an earlier payload: %s", got)
	}
	row, err := c.EncodeRow(map[string]any{"x": 2.5})
	if err != nil || string(row) != `{"x":2.5}` {
		t.Errorf("EncodeRow = %s, %v", row, err)
	}
	for _, bad := range []any{math.NaN(), math.Inf(1), map[string]any{"a": []any{math.Inf(-1)}}} {
		if _, err := c.EncodeValue(bad); err == nil || !strings.HasPrefix(err.Error(), "encode json: unsupported value") {
			t.Errorf("EncodeValue(%v) error = %v, want unsupported value", bad, err)
		}
	}
	if _, err := c.EncodeValue(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)); err == nil {
		t.Error("year 10000: want error")
	}
	// The codec must still work after an error mid-object.
	ok, err := c.EncodeRow(map[string]any{"b": int64(1), "a": int64(2)})
	if err != nil || string(ok) != `{"a":2,"b":1}` {
		t.Errorf("EncodeRow after error = %s, %v", ok, err)
	}
}

// TestEncodeJSONMatchesEncodingJSON checks the writer against encoding/json
// (with HTML escaping off) over a spread of values.
func TestEncodeJSONMatchesEncodingJSON(t *testing.T) {
	values := []any{
		int64(0), int64(math.MinInt64), 0.1, -0.0, 1.5e300, 5e-324, 123456789.125, 1e20, 1e21, 1e-6, 9.99e-7,
		"", "plain", "ctl\x00\x1f\x7f", "\u2029x", "日本", true, nil,
		[]any{"a", int64(1), []any{nil}}, map[string]any{"z": map[string]any{"b": int64(1), "a": int64(2)}, "A": "q"},
		[]byte{0, 1, 2, 250},
	}
	for _, v := range values {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		got, err := AppendJSON(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("AppendJSON(%#v) = %s, encoding/json = %s", v, got, want.String())
		}
	}
}
