package row

import (
	"reflect"
	"sync"
	"testing"

	"github.com/rekuiper/rekuiper/internal/value"
)

func TestNewLayout(t *testing.T) {
	if l := NewLayout(nil); l != nil {
		t.Errorf("NewLayout(nil) = %v, want nil (schemaless)", l)
	}
	l := NewLayout([]string{"a", "b", "a", "c"})
	if l.Len() != 3 {
		t.Fatalf("Len = %d, want 3 (a repeated name keeps its first slot)", l.Len())
	}
	for i, want := range []string{"a", "b", "c"} {
		if l.Name(i) != want {
			t.Errorf("Name(%d) = %q, want %q", i, l.Name(i), want)
		}
		if j, ok := l.Index(want); !ok || j != i {
			t.Errorf("Index(%q) = %d, %v; want %d", want, j, ok, i)
		}
	}
	if _, ok := l.Index("d"); ok {
		t.Error("Index of an undeclared name succeeded")
	}
	if !l.same(NewLayout([]string{"a", "b", "c"})) {
		t.Error("layouts of the same fields built apart are not the same")
	}
	for _, other := range [][]string{{"b", "a", "c"}, {"a", "b"}, {"a", "b", "c", "d"}, {"a\x00b", "c"}} {
		if l.same(NewLayout(other)) {
			t.Errorf("layout %v is the same as %v", other, l.names)
		}
	}
}

// msgs cover present, null and absent declared columns and undeclared ones.
var msgs = []map[string]any{
	{"id": int64(1), "temp": 2.5, "name": "x"},
	{"id": int64(2), "temp": nil},
	{"name": "y", "extra": true, "more": []any{int64(1)}},
	{},
	{"extra": nil},
}

func TestSlottedTupleReadsLikeMapTuple(t *testing.T) {
	l := NewLayout([]string{"id", "temp", "name"})
	var a Arena
	for _, m := range msgs {
		for name, st := range map[string]*Tuple{"NewTuple": NewTuple(l, m), "Arena.TupleOf": a.TupleOf(l, m)} {
			ref := &Tuple{Emitter: "s", Message: m}
			st.Emitter = "s"
			if st.Layout() != l {
				t.Fatalf("%s: layout not set", name)
			}
			for _, col := range []string{"id", "temp", "name", "extra", "more", "missing"} {
				for _, stream := range []string{"", "s", "other"} {
					gv, gok := st.Value(stream, col)
					wv, wok := ref.Value(stream, col)
					if gok != wok || !reflect.DeepEqual(gv, wv) {
						t.Errorf("%s %v: Value(%q, %q) = %v, %v; want %v, %v", name, m, stream, col, gv, gok, wv, wok)
					}
				}
			}
			if got := st.Columns(""); !reflect.DeepEqual(got, m) {
				t.Errorf("%s: Columns = %#v, want %#v", name, got, m)
			}
			if got := st.Columns("other"); got != nil {
				t.Errorf("%s: Columns of another stream = %v", name, got)
			}
			ranged := map[string]any{}
			st.Range("s", func(k string, v any) { ranged[k] = v })
			if !reflect.DeepEqual(ranged, m) {
				t.Errorf("%s: Range = %#v, want %#v", name, ranged, m)
			}
		}
	}
}

func TestFieldGet(t *testing.T) {
	decoded := NewLayout([]string{"id", "temp", "name"})
	planned := NewLayout([]string{"id", "temp", "name"}) // built apart, same fields
	reordered := NewLayout([]string{"name", "temp", "id"})
	m := map[string]any{"id": int64(7), "temp": nil, "extra": "e"}
	rows := map[string]Row{
		"slotted":             withEmitter(NewTuple(decoded, m), "s"),
		"slotted other order": withEmitter(NewTuple(reordered, m), "s"),
		"map":                 &Tuple{Emitter: "s", Message: m},
		"joined":              &Joined{Tuples: []*Tuple{withEmitter(NewTuple(decoded, map[string]any{"id": int64(1)}), "t"), withEmitter(NewTuple(decoded, m), "s")}},
	}
	tests := []struct {
		stream, name string
		want         any
		ok           bool
	}{
		{"", "id", int64(7), true},
		{"s", "id", int64(7), true},
		{"", "temp", nil, true}, // present null
		{"", "name", nil, false},
	}
	for rn, r := range rows {
		for _, tt := range tests {
			f, ok := planned.Field(tt.stream, tt.name)
			if !ok {
				t.Fatalf("Field(%q) not declared", tt.name)
			}
			if rn == "joined" && tt.stream == "" && tt.name == "id" {
				tt.want = int64(1) // the first tuple wins, as Row.Value does
			}
			v, ok := f.Get(r)
			if ok != tt.ok || !reflect.DeepEqual(v, tt.want) {
				t.Errorf("%s: Get(%s.%s) = %v, %v; want %v, %v", rn, tt.stream, tt.name, v, ok, tt.want, tt.ok)
			}
		}
	}
	f, _ := planned.Field("t", "id")
	if v, ok := f.Get(rows["slotted"]); ok {
		t.Errorf("a field of stream t read %v from a tuple of s", v)
	}
	if _, ok := planned.Field("", "extra"); ok {
		t.Error("an undeclared column resolved to a slot")
	}
	if v, ok := f.Get(nil); ok || v != nil {
		t.Errorf("Get(nil row) = %v, %v", v, ok)
	}
}

func withEmitter(t *Tuple, s string) *Tuple {
	t.Emitter = s
	return t
}

func TestSlottedColumnsAreBuiltOnceAndShared(t *testing.T) {
	l := NewLayout([]string{"a"})
	shared := NewTuple(l, map[string]any{"a": int64(1), "x": "extra"})
	copies := []*Tuple{shared.Clone(), shared.Clone()}
	var wg sync.WaitGroup
	cols := make([]map[string]any, len(copies))
	for i, c := range copies { // rules read their copies concurrently
		wg.Go(func() { cols[i] = c.Columns("") })
	}
	wg.Wait()
	for _, m := range append(cols, shared.Columns("")) {
		if reflect.ValueOf(m).Pointer() != reflect.ValueOf(cols[0]).Pointer() {
			t.Fatal("copies of one tuple built their columns twice")
		}
	}
	if want := map[string]any{"a": int64(1), "x": "extra"}; !reflect.DeepEqual(cols[0], want) {
		t.Errorf("Columns = %v, want %v", cols[0], want)
	}
}

func TestUnshare(t *testing.T) {
	l := NewLayout([]string{"a"})
	for _, shared := range []*Tuple{NewTuple(l, map[string]any{"a": int64(1), "x": "e"}), NewTuple(nil, map[string]any{"a": int64(1), "x": "e"})} {
		_ = shared.Columns("")
		own := shared.Clone()
		own.Unshare()
		own.Set("a", "own")
		own.Set("x", "own x")
		own.Set("y", nil)
		for _, k := range []string{"a", "x"} {
			if v, _ := shared.Value("", k); v == "own" || v == "own x" {
				t.Errorf("layout %v: Set on an unshared copy changed the original's %s", l != nil, k)
			}
		}
		want := map[string]any{"a": "own", "x": "own x", "y": nil}
		if got := own.Columns(""); !reflect.DeepEqual(got, want) {
			t.Errorf("layout %v: columns after Unshare and Set = %v, want %v", shared.Layout() != nil, got, want)
		}
	}
}

func TestSlottedTupleCodecRoundTrip(t *testing.T) {
	l := NewLayout([]string{"id", "temp"})
	for _, m := range msgs {
		tu := NewTuple(l, m)
		tu.Emitter, tu.Timestamp = "s", 42
		tu = tu.Clone()
		tu.SetAlias("x", int64(3))
		back := ReadTuple(value.NewReader(AppendTuple(nil, tu)))
		if back.Emitter != "s" || back.Timestamp != 42 {
			t.Errorf("header = %s %d", back.Emitter, back.Timestamp)
		}
		want := m
		if len(m) == 0 {
			want = nil // an empty map reads back as none
		}
		if got := back.Columns(""); len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
			t.Errorf("columns %#v read back as %#v", m, got)
		}
		if v, _ := back.Alias("x"); v != int64(3) {
			t.Errorf("alias = %v", v)
		}
	}
}
