package format

import (
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"testing"

	"github.com/rekuiper/rekuiper/internal/row"
)

var tuplePayloads = []string{
	`{"id":1,"temp":23.5,"name":"dev1","ok":true,"none":null}`,
	`{"name":"dev2","id":2}`, // another key order
	`{"id":3,"temp":null}`,
	`{"id":4,"id":5,"extra":"last wins"}`,
	`{}`,
	`{"temp":1e400}`,
	`{"s":"a\"b\\c\n\u00e9","name":"\ud800x","k\u0065y":"esc"}`,
	`{"nested":{"id":1,"a":[1,2.5,"x",{"b":null}]},"id":-9223372036854775808}`,
	`[{"id":1},{"name":"x","extra":2},{}]`,
	`[]`,
	`[{"id":1},2]`,
	`{"id":1,"temp":`,
	`{"id":1}x`,
	`"just a string"`,
	`42`,
	``,
	`[{"id":1}`,
	"{\"name\":\"a\xffb\",\"id\":300}",
}

// checkTuplesMatchDecode decodes payload with Decode and with DecodeTuples
// (codec td, whose declared fields are schema) and fails unless both give
// the same records or the same error.
func checkTuplesMatchDecode(t *testing.T, td *JSONCodec, schema []string, payload []byte) {
	t.Helper()
	want, wantErr := NewJSON().Decode(payload)
	prefix := []*row.Tuple{{Emitter: "already there"}}
	got, err := td.DecodeTuples(prefix, payload)
	if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("%q: DecodeTuples error %v, Decode error %v", payload, err, wantErr)
	}
	if len(got) == 0 || got[0] != prefix[0] {
		t.Fatalf("%q: DecodeTuples did not append to dst", payload)
	}
	if err != nil {
		if len(got) != 1 {
			t.Fatalf("%q: failed DecodeTuples returned %d tuples, want dst unchanged", payload, len(got))
		}
		return
	}
	got = got[1:]
	if len(got) != len(want) {
		t.Fatalf("%q: %d tuples, Decode gives %d records", payload, len(got), len(want))
	}
	for i, tu := range got {
		if !reflect.DeepEqual(tu.Columns(""), want[i]) {
			t.Errorf("%q: tuple %d columns %#v, Decode gives %#v", payload, i, tu.Columns(""), want[i])
		}
		if (tu.Layout() != nil) != (len(schema) > 0) {
			t.Errorf("%q: tuple layout %v with schema %v", payload, tu.Layout(), schema)
		}
		for _, name := range schema {
			gv, gok := tu.Value("", name)
			wv, wok := want[i][name]
			if gok != wok || !reflect.DeepEqual(gv, wv) {
				t.Errorf("%q: tuple %d column %s = %#v, %v; Decode gives %#v, %v", payload, i, name, gv, gok, wv, wok)
			}
		}
		for k, wv := range want[i] {
			if gv, ok := tu.Value("", k); !ok || !reflect.DeepEqual(gv, wv) {
				t.Errorf("%q: tuple %d Value(%s) = %#v, %v; want %#v", payload, i, k, gv, ok, wv)
			}
		}
	}
}

func TestDecodeTuplesMatchesDecode(t *testing.T) {
	for _, schema := range [][]string{nil, {"id", "temp", "name"}, {"name", "id"}, {"nothing", "declared", "here"}} {
		t.Run(fmt.Sprint(schema), func(t *testing.T) {
			td := NewJSONStream(schema)
			// Twice over, so that the codec's per-position caches see
			// changing key orders.
			for range 2 {
				for _, p := range tuplePayloads {
					checkTuplesMatchDecode(t, td, schema, []byte(p))
				}
			}
		})
	}
}

func TestNewUsesFieldsForTuples(t *testing.T) {
	c, err := New("json", Options{Fields: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := c.(TupleDecoder).DecodeTuples(nil, []byte(`{"id":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if l := ts[0].Layout(); l == nil || l.Len() != 1 || l.Name(0) != "id" {
		t.Errorf("layout of a stream declaring id: %v", l)
	}
}

// TestDecodeTuplesKeepsEarlierRecords decodes more records than an arena
// chunk holds and checks every one after a GC, so that values sharing
// chunks are shown not to overwrite or lose one another.
func TestDecodeTuplesKeepsEarlierRecords(t *testing.T) {
	td := NewJSONStream([]string{"deviceId", "temperature", "humidity", "status"})
	var ts []*row.Tuple
	var want []map[string]any
	for i := range 500 {
		p := []byte(fmt.Sprintf(`{"deviceId":"dev%d","temperature":%d.5,"humidity":%d,"status":"s%d","x":%d}`, i, i, i*1000, i%7, i))
		var err error
		if ts, err = td.DecodeTuples(ts, p); err != nil {
			t.Fatal(err)
		}
		m, _ := NewJSON().Decode(p)
		want = append(want, m[0])
		p[2] = 'X' // the payload buffer may be reused by the source
	}
	runtime.GC()
	for i, tu := range ts {
		if got := tu.Columns(""); !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("record %d decoded as %#v, want %#v", i, got, want[i])
		}
	}
}

func TestDecodeTuplesAllocations(t *testing.T) {
	td := NewJSONStream([]string{"deviceId", "temperature", "humidity", "status"})
	payload := []byte(`{"deviceId":"dev12","temperature":31.5,"humidity":55,"status":"ok"}`)
	dst := make([]*row.Tuple, 0, 1)
	// AllocsPerRun rounds down to whole allocations per run, so each run
	// decodes many records.
	const records = 1000
	n := testing.AllocsPerRun(20, func() {
		for range records {
			if _, err := td.DecodeTuples(dst[:0], payload); err != nil {
				t.Fatal(err)
			}
		}
	}) / records
	// Chunked tuples, records, slots and values: 1/64 + 1/32 + 4/64 for
	// the tuple, 1/32 for the float, 2/32 for two string headers and a
	// little text, about 0.21 per record of a typed stream (Decode costs
	// 6).
	if n > 0.25 {
		t.Errorf("DecodeTuples costs %.3f allocations per record, want at most 0.25", n)
	}
}

func FuzzDecodeTuples(f *testing.F) {
	for _, p := range tuplePayloads {
		f.Add([]byte(p))
	}
	schema := []string{"id", "temp", "name"}
	f.Fuzz(func(t *testing.T, data []byte) {
		td := NewJSONStream(schema)
		if _, err := td.DecodeTuples(nil, []byte(`{"name":"x","k\u00e9y":1,"id":2}`)); err != nil {
			t.Fatal(err)
		}
		checkTuplesMatchDecode(t, td, schema, data)
		checkTuplesMatchDecode(t, NewJSONStream(nil), nil, data)
	})
}

// TestDecodeTuplesRecycle: records decoded in windows that end with
// Recycle reuse the arena's memory and the schemaless maps: decoding costs
// no allocation once warm, for a typed stream and a schemaless one. A
// window ended by Keep stays intact however many are recycled after it.
func TestDecodeTuplesRecycle(t *testing.T) {
	payload := []byte(`{"deviceId":"dev12","temperature":31.5,"humidity":55,"status":"ok"}`)
	other := []byte(`{"deviceId":"dev99","temperature":-2.25,"humidity":100000,"status":"broken"}`)
	for name, schema := range map[string][]string{"typed": {"deviceId", "temperature", "humidity", "status"}, "schemaless": nil} {
		t.Run(name, func(t *testing.T) {
			td := NewJSONStream(schema)
			kept, err := td.DecodeTuples(nil, payload)
			if err != nil {
				t.Fatal(err)
			}
			want := kept[0].Columns("")
			wantCopy := maps.Clone(want)
			td.Keep()
			dst := make([]*row.Tuple, 0, 64)
			window := func() {
				for range 64 {
					var err error
					if dst, err = td.DecodeTuples(dst, other); err != nil {
						t.Fatal(err)
					}
				}
				clear(dst)
				dst = dst[:0]
				td.Recycle()
			}
			window() // the arena tracks its windows from the first Recycle on
			n := testing.AllocsPerRun(20, window)
			if n != 0 {
				t.Errorf("a recycled window of 64 records costs %v allocations", n)
			}
			if got := kept[0].Columns(""); !reflect.DeepEqual(got, wantCopy) {
				t.Fatalf("kept record reads %#v after recycling, want %#v", got, wantCopy)
			}
			ts, err := td.DecodeTuples(nil, other)
			if err != nil {
				t.Fatal(err)
			}
			if got := ts[0].Columns(""); !reflect.DeepEqual(got, map[string]any{"deviceId": "dev99", "temperature": -2.25, "humidity": int64(100000), "status": "broken"}) {
				t.Fatalf("record decoded into recycled memory reads %#v", got)
			}
		})
	}
}
