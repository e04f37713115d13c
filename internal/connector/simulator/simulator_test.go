package simulator

import (
	"context"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/conformancetest"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
	"github.com/rekuiper/rekuiper/sdk/sdktest"
)

func newSim(t *testing.T, v *clock.Virtual, props map[string]any) api.Source {
	t.Helper()
	return connectortest.OpenSource(t, Register, Type, props, connector.Deps{Clock: v})
}

type result struct {
	m   *api.Message
	err error
}

// readAt starts a Read, checks it does not finish before the clock reaches
// ms, then advances to ms and returns what Read returned. A row due now
// must come without the clock moving.
func readAt(t *testing.T, v *clock.Virtual, s api.Source, ms int64) (*api.Message, error) {
	t.Helper()
	ch := make(chan result, 1)
	go func() {
		m, err := s.Read(context.Background())
		ch <- result{m, err}
	}()
	if ms <= v.Now().UnixMilli() {
		select {
		case r := <-ch:
			return r.m, r.err
		case <-time.After(5 * time.Second):
			t.Fatalf("read of a row due at %d ms did not return at %d ms", ms, v.Now().UnixMilli())
		}
	}
	v.AdvanceTo(ms-1, nil)
	select {
	case r := <-ch:
		if r.err == nil {
			t.Fatalf("read returned before %d ms (clock %d)", ms, v.Now().UnixMilli())
		}
		return r.m, r.err
	case <-time.After(20 * time.Millisecond):
	}
	deadline := time.After(5 * time.Second)
	for {
		v.AdvanceTo(ms, nil)
		select {
		case r := <-ch:
			return r.m, r.err
		case <-deadline:
			t.Fatal("read never returned")
		case <-time.After(time.Millisecond):
		}
	}
}

var rows = []any{
	map[string]any{"id": 1, "temp": 20.5},
	map[string]any{"id": 2, "temp": 21.0, "tags": []any{"a"}},
}

func TestPacingAndLoop(t *testing.T) {
	tests := []struct {
		name    string
		props   map[string]any
		wantIDs []int64 // then io.EOF when loop is false
		eof     bool
	}{
		{"loop", map[string]any{"data": rows, "interval": "1s"}, []int64{1, 2, 1, 2}, false},
		{"no loop", map[string]any{"data": rows, "interval": 1000, "loop": false}, []int64{1, 2}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := clock.NewVirtual(0)
			s := newSim(t, v, tc.props)
			defer s.Close(context.Background())
			// The first row at Connect (eKuiper pulls once at start),
			// then one per interval.
			for i, id := range tc.wantIDs {
				due := int64(i) * 1000
				m, err := readAt(t, v, s, due)
				if err != nil {
					t.Fatal(err)
				}
				if m.Data["id"] != id {
					t.Fatalf("row %d id = %#v, want %d", i, m.Data["id"], id)
				}
				if m.Time.UnixMilli() != due {
					t.Fatalf("row %d time = %d, want %d", i, m.Time.UnixMilli(), due)
				}
			}
			if tc.eof {
				if _, err := s.Read(context.Background()); !errors.Is(err, io.EOF) {
					t.Fatalf("err = %v, want io.EOF", err)
				}
			}
		})
	}
}

func TestRowsAreTypedCopies(t *testing.T) {
	v := clock.NewVirtual(0)
	s := newSim(t, v, map[string]any{"data": rows[:1], "interval": 10})
	m, err := readAt(t, v, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": int64(1), "temp": 20.5}
	if !reflect.DeepEqual(m.Data, want) {
		t.Fatalf("data = %#v, want %#v", m.Data, want)
	}
	m.Data["id"] = int64(100)
	m2, err := readAt(t, v, s, 10)
	if err != nil {
		t.Fatal(err)
	}
	if m2.Data["id"] != int64(1) {
		t.Fatalf("mutation leaked into the next loop: %v", m2.Data)
	}
}

func TestReadCancelled(t *testing.T) {
	v := clock.NewVirtual(0)
	s := newSim(t, v, map[string]any{"data": rows})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Read(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestRewind(t *testing.T) {
	v := clock.NewVirtual(0)
	s := newSim(t, v, map[string]any{"data": rows})
	if _, err := readAt(t, v, s, 0); err != nil {
		t.Fatal(err)
	}
	off, err := s.(api.Rewindable).Offset()
	if err != nil {
		t.Fatal(err)
	}
	if string(off) != `{"v":1,"i":1}` {
		t.Fatalf("offset = %s", off)
	}
	tests := []struct {
		name    string
		offset  string
		wantID  int64
		wantErr bool
	}{
		{"from offset", string(off), 2, false},
		{"index wraps when looping", `{"v":1,"i":2}`, 1, false},
		{"idempotent", `{"v":1,"i":1}`, 2, false},
		{"bad version", `{"v":2,"i":1}`, 0, true},
		{"negative", `{"v":1,"i":-1}`, 0, true},
		{"garbage", `nope`, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v2 := clock.NewVirtual(0)
			s2 := newSim(t, v2, map[string]any{"data": rows})
			rw := s2.(api.Rewindable)
			err := rw.Rewind([]byte(tc.offset))
			if tc.wantErr {
				if err == nil {
					t.Fatal("rewind accepted a bad offset")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := rw.Rewind([]byte(tc.offset)); err != nil {
				t.Fatal(err)
			}
			m, err := readAt(t, v2, s2, 0)
			if err != nil {
				t.Fatal(err)
			}
			if m.Data["id"] != tc.wantID {
				t.Fatalf("id = %v, want %d", m.Data["id"], tc.wantID)
			}
		})
	}
}

func TestBadProps(t *testing.T) {
	r := connectortest.Registry(t, Register)
	tests := []struct {
		name  string
		props map[string]any
		deps  connector.Deps
	}{
		{"missing data", map[string]any{}, connector.Deps{Clock: clock.NewVirtual(0)}},
		{"empty data", map[string]any{"data": []any{}}, connector.Deps{Clock: clock.NewVirtual(0)}},
		{"not objects", map[string]any{"data": []any{1}}, connector.Deps{Clock: clock.NewVirtual(0)}},
		{"no clock", map[string]any{"data": rows}, connector.Deps{}},
		{"unknown prop", map[string]any{"data": rows, "speed": 2}, connector.Deps{Clock: clock.NewVirtual(0)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := r.NewSource(Type, tc.props, tc.deps); err == nil {
				t.Fatal("built")
			}
		})
	}
}

func TestLookup(t *testing.T) {
	data := []any{
		map[string]any{"k": "v1", "n": 1, "tags": []any{"a"}},
		map[string]any{"k": "v2", "n": 2},
		map[string]any{"k": "v1", "n": 3},
	}
	// interval and loop come with the simulator source's confKeys.
	l := connectortest.OpenLookup(t, Register, Type, map[string]any{"data": data, "interval": "1ms", "loop": false}, connector.Deps{})
	ctx := context.Background()
	tests := []struct {
		name string
		keys map[string]any
		want []int64 // n of the rows, in data order
	}{
		{"one key, two rows", map[string]any{"k": "v1"}, []int64{1, 3}},
		{"every key must match", map[string]any{"k": "v1", "n": 3}, []int64{3}},
		{"text form compares", map[string]any{"n": "2"}, []int64{2}},
		{"no row", map[string]any{"k": "v9"}, nil},
		{"unknown field", map[string]any{"x": "v1"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := l.Lookup(ctx, tc.keys)
			if err != nil {
				t.Fatal(err)
			}
			var ns []int64
			for _, row := range got {
				ns = append(ns, row["n"].(int64))
			}
			if !reflect.DeepEqual(ns, tc.want) {
				t.Fatalf("rows n = %v, want %v (%v)", ns, tc.want, got)
			}
		})
	}
	// Rows are copies: changing one does not change the table.
	got, _ := l.Lookup(ctx, map[string]any{"n": 1})
	got[0]["tags"].([]any)[0] = "changed"
	again, _ := l.Lookup(ctx, map[string]any{"n": 1})
	if again[0]["tags"].([]any)[0] != "a" {
		t.Fatalf("a returned row shares memory with the table: %v", again[0])
	}
	r := connectortest.Registry(t, Register)
	for name, props := range map[string]map[string]any{
		"no data":    {},
		"empty data": {"data": []any{}},
		"not object": {"data": []any{1}},
	} {
		if _, err := r.NewLookup(Type, props, connector.Deps{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestLookupConformance runs the lookup checks every lookup source passes.
func TestLookupConformance(t *testing.T) {
	data := []any{
		map[string]any{"k": "v1", "n": 1, "tags": []any{"a"}},
		map[string]any{"k": "v2", "n": 2},
		map[string]any{"k": "v1", "n": 3},
	}
	conformancetest.RunLookupSuite(t, conformancetest.LookupFactory{
		Spec: LookupSpec(),
		New:  NewLookup,
		Suite: sdktest.Lookup{
			Props: func(*testing.T) map[string]any { return map[string]any{"data": data} },
			Key:   map[string]any{"k": "v1"},
			Want: []map[string]any{
				{"k": "v1", "n": int64(3)},
				{"k": "v1", "n": int64(1), "tags": []any{"a"}},
			},
			Missing: map[string]any{"k": "v9"},
			Invalid: []sdktest.InvalidCase{
				{Name: "no data", Props: map[string]any{}, WantErr: `"data" is required`},
				{Name: "empty data", Props: map[string]any{"data": []any{}}, WantErr: `"data" is empty`},
				{Name: "not objects", Props: map[string]any{"data": []any{1}}, WantErr: "not an object"},
			},
		},
	})
}
