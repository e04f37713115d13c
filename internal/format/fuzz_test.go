package format

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"temp":23.5,"name":"dev1","ok":true}`,
		`[{"a":[1,2,{"b":null}]},{"c":"\u00e9\ud83d\ude00"}]`,
		`{"a":1e400}`, `{"a":-0,"b":1E+2,"c":9223372036854775808}`,
		`{"s":"a\"b\\c\n"}`, "{\"s\":\"\xff\"}", `[]`, `{}`, `{"a":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := NewJSON()
		// Prime the codec's key caches so that reuse across messages is
		// exercised too.
		if _, err := c.Decode([]byte(`{"id":1,"a":2.5,"k\u00e9y":"x"}`)); err != nil {
			t.Fatal(err)
		}
		rows, err := c.Decode(data)
		valid := json.Valid(data)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a *SyntaxError", err)
			}
			if valid && !acceptableRejection(se.Msg) {
				t.Fatalf("rejected valid JSON %q: %v", data, err)
			}
			return
		}
		if !valid {
			t.Fatalf("accepted invalid JSON %q: %v", data, rows)
		}
		var ref any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&ref); err != nil {
			t.Fatalf("encoding/json rejects %q: %v", data, err)
		}
		refRows := fromStdlib(ref)
		if !sameValue(refRows, rowsToAny(rows, ref), false) {
			t.Fatalf("Decode(%q) = %#v, encoding/json = %#v", data, rows, refRows)
		}
		// Again, with the codec's caches now holding this payload's keys.
		twice, err := c.Decode(data)
		if err != nil || !sameValue(rowsToAny(rows, ref), rowsToAny(twice, ref), false) {
			t.Fatalf("second Decode(%q) = %#v, %v; first gave %#v", data, twice, err, rows)
		}
		enc, err := c.Encode(rows)
		if err != nil {
			t.Fatalf("Encode(%#v): %v", rows, err)
		}
		again, err := c.Decode(enc)
		if err != nil {
			t.Fatalf("re-decode %s: %v", enc, err)
		}
		if !sameValue(rowsToAny(rows, ref), rowsToAny(again, ref), true) {
			t.Fatalf("round trip changed %#v into %#v via %s", rows, again, enc)
		}
	})
}

func acceptableRejection(msg string) bool {
	for _, s := range []string{"expected an object", "is out of range", "exceeded max depth"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// rowsToAny shapes decoded rows like the top-level JSON value ref.
func rowsToAny(rows []map[string]any, ref any) any {
	if _, isObject := ref.(map[string]any); isObject && len(rows) == 1 {
		return rows[0]
	}
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r
	}
	return out
}

// fromStdlib maps encoding/json's UseNumber output to the value model.
func fromStdlib(v any) any {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := x.Int64(); err == nil {
				return i
			}
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i, e := range x {
			x[i] = fromStdlib(e)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = fromStdlib(e)
		}
	}
	return v
}

// sameValue compares decoded values. With loose set, an integral float64
// equals the int64 of the same value (the JSON writer prints 3.0 as 3).
func sameValue(a, b any, loose bool) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameValue(v, w, loose) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i], loose) {
				return false
			}
		}
		return true
	case float64:
		switch y := b.(type) {
		case float64:
			return x == y || (math.IsNaN(x) && math.IsNaN(y))
		case int64:
			return loose && float64(y) == x
		}
		return false
	case int64:
		switch y := b.(type) {
		case int64:
			return x == y
		case float64:
			return loose && float64(x) == y
		}
		return false
	}
	return a == b
}
