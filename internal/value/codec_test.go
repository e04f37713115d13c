package value

import (
	"reflect"
	"testing"
	"time"
)

func TestCodecRoundTrip(t *testing.T) {
	at := time.Date(2023, 11, 14, 22, 13, 20, 123000000, time.UTC)
	cases := []struct {
		name string
		in   any
	}{
		{"nil", nil},
		{"int", int64(-42)},
		{"int stays int", int64(3)},
		{"float stays float", 3.0},
		{"nan-free float", -2.5e-10},
		{"string", "héllo"},
		{"bools", []any{true, false}},
		{"bytes", []byte{0, 1, 2, 255}},
		{"time", at},
		{"nested", map[string]any{"a": []any{int64(1), 2.0, nil, map[string]any{"b": "c"}}, "n": nil}},
		{"empty object", map[string]any{}},
		{"empty array", []any{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := AppendValue(nil, c.in)
			r := NewReader(b)
			got := r.Value()
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			if r.Len() != 0 {
				t.Fatalf("%d bytes left", r.Len())
			}
			if tm, ok := c.in.(time.Time); ok {
				if !tm.Equal(got.(time.Time)) {
					t.Fatalf("got %v, want %v", got, tm)
				}
				return
			}
			if !reflect.DeepEqual(got, c.in) {
				t.Fatalf("got %#v, want %#v", got, c.in)
			}
		})
	}
}

func TestCodecNormalisesGoTypes(t *testing.T) {
	r := NewReader(AppendValue(nil, []any{int32(7), float32(1.5)}))
	got := r.Value()
	want := []any{int64(7), 1.5}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}

func TestCodecDeterministic(t *testing.T) {
	m := map[string]any{"z": int64(1), "a": int64(2), "m": []any{"x"}}
	first := AppendValue(nil, m)
	for i := 0; i < 20; i++ {
		if got := AppendValue(nil, m); string(got) != string(first) {
			t.Fatal("encoding of equal maps differs")
		}
	}
}

func FuzzCodecDecode(f *testing.F) {
	f.Add(AppendValue(nil, map[string]any{"a": []any{int64(1), "x", 2.5}}))
	f.Add([]byte{tagArray, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(b)
		v := r.Value()
		if r.Err() != nil {
			return
		}
		again := NewReader(AppendValue(nil, v)).Value()
		if !Equal(v, again) {
			t.Fatalf("re-encoding changed the value: %#v vs %#v", v, again)
		}
	})
}
