package memory

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
	"github.com/rekuiper/rekuiper/internal/connector/membus"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

func setup(t *testing.T) (*connector.Registry, connector.Deps) {
	t.Helper()
	r := connectortest.Registry(t, Register)
	return r, connector.Deps{Memory: membus.New()}
}

func readN(t *testing.T, s api.Source, n int) []*api.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out []*api.Message
	for range n {
		m, err := s.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		out = append(out, m)
	}
	return out
}

func TestSourceSink(t *testing.T) {
	tests := []struct {
		name      string
		filter    string
		sinkProps map[string]any
		msg       *api.SinkMessage
		want      []string // topics received
		wantData  []map[string]any
	}{
		{
			name:      "static topic, all rows",
			filter:    "out",
			sinkProps: map[string]any{"topic": "out"},
			msg:       &api.SinkMessage{Rows: []map[string]any{{"a": int64(1)}, {"a": int64(2)}}},
			want:      []string{"out", "out"},
			wantData:  []map[string]any{{"a": int64(1)}, {"a": int64(2)}},
		},
		{
			name:      "templated topic per row",
			filter:    "devices/+",
			sinkProps: map[string]any{"topic": "devices/{{.id}}"},
			msg:       &api.SinkMessage{Rows: []map[string]any{{"id": "d1"}, {"id": int64(7)}}},
			want:      []string{"devices/d1", "devices/7"},
			wantData:  []map[string]any{{"id": "d1"}, {"id": int64(7)}},
		},
		{
			name:      "payload only is decoded",
			filter:    "#",
			sinkProps: map[string]any{"topic": "x/y"},
			msg:       &api.SinkMessage{Payload: []byte(`[{"a":1,"b":2.5}]`)},
			want:      []string{"x/y"},
			wantData:  []map[string]any{{"a": int64(1), "b": 2.5}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, deps := setup(t)
			ctx := context.Background()
			src, err := r.NewSource(Type, map[string]any{"datasource": tc.filter, "format": "json"}, deps)
			if err != nil {
				t.Fatal(err)
			}
			if err := src.Connect(ctx); err != nil {
				t.Fatal(err)
			}
			defer src.Close(ctx)
			sink, err := r.NewSink(Type, tc.sinkProps, deps)
			if err != nil {
				t.Fatal(err)
			}
			if err := sink.Connect(ctx); err != nil {
				t.Fatal(err)
			}
			if err := sink.Write(ctx, tc.msg); err != nil {
				t.Fatal(err)
			}
			got := readN(t, src, len(tc.want))
			for i, m := range got {
				if m.Meta["topic"] != tc.want[i] {
					t.Errorf("message %d topic = %v, want %s", i, m.Meta["topic"], tc.want[i])
				}
				if !reflect.DeepEqual(m.Data, tc.wantData[i]) {
					t.Errorf("message %d data = %#v, want %#v", i, m.Data, tc.wantData[i])
				}
			}
		})
	}
}

func TestSourceCopiesRows(t *testing.T) {
	r, deps := setup(t)
	ctx := context.Background()
	var srcs []api.Source
	for range 2 {
		s, err := r.NewSource(Type, map[string]any{"datasource": "t"}, deps)
		if err != nil {
			t.Fatal(err)
		}
		s.Connect(ctx)
		defer s.Close(ctx)
		srcs = append(srcs, s)
	}
	row := map[string]any{"a": int64(1)}
	if err := deps.Memory.Publish(ctx, membus.Message{Topic: "t", Data: row}); err != nil {
		t.Fatal(err)
	}
	m1 := readN(t, srcs[0], 1)[0]
	m1.Data["a"] = int64(99)
	if m2 := readN(t, srcs[1], 1)[0]; m2.Data["a"] != int64(1) {
		t.Fatalf("second subscriber saw the first one's mutation: %v", m2.Data)
	}
}

func TestSinkErrors(t *testing.T) {
	r, deps := setup(t)
	tests := []struct {
		name  string
		props map[string]any
		msg   *api.SinkMessage
	}{
		{"template missing field", map[string]any{"topic": "d/{{.id}}"}, &api.SinkMessage{Rows: []map[string]any{{"x": 1}}}},
		{"bad rowkind", map[string]any{"topic": "t", "rowkindField": "op"}, &api.SinkMessage{Rows: []map[string]any{{"op": "merge"}}}},
		{"payload not objects", map[string]any{"topic": "t"}, &api.SinkMessage{Payload: []byte(`[1,2]`)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := r.NewSink(Type, tc.props, deps)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Write(context.Background(), tc.msg)
			if err == nil || errors.Is(err, api.ErrRetryable) {
				t.Fatalf("err = %v, want a permanent error", err)
			}
		})
	}
	t.Run("wildcard topic refused", func(t *testing.T) {
		if _, err := r.NewSink(Type, map[string]any{"topic": "a/#"}, deps); err == nil {
			t.Fatal("accepted a wildcard topic")
		}
	})
	t.Run("no bus", func(t *testing.T) {
		if _, err := r.NewSource(Type, map[string]any{"datasource": "a"}, connector.Deps{}); err == nil {
			t.Fatal("built without a bus")
		}
	})
}

func TestSinkBackpressure(t *testing.T) {
	r, deps := setup(t)
	src, _ := r.NewSource(Type, map[string]any{"datasource": "t", "bufferLength": 1}, deps)
	src.Connect(context.Background())
	defer src.Close(context.Background())
	sink, _ := r.NewSink(Type, map[string]any{"topic": "t"}, deps)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	// The rows of one write are one message: the first fills the buffer.
	if err := sink.Write(ctx, &api.SinkMessage{Rows: []map[string]any{{"a": 1}, {"a": 2}}}); err != nil {
		t.Fatal(err)
	}
	err := sink.Write(ctx, &api.SinkMessage{Rows: []map[string]any{{"a": 3}}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the write to block until its deadline", err)
	}
}

func TestLookup(t *testing.T) {
	r, deps := setup(t)
	ctx := context.Background()
	tbl, err := r.NewLookup(Type, map[string]any{"datasource": "tbl/#", "key": "id"}, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer tbl.Close(ctx)
	sink, err := r.NewSink(Type, map[string]any{"topic": "tbl/x", "rowkindField": "op"}, deps)
	if err != nil {
		t.Fatal(err)
	}
	write := func(rows ...map[string]any) {
		t.Helper()
		if err := sink.Write(ctx, &api.SinkMessage{Rows: rows}); err != nil {
			t.Fatal(err)
		}
	}
	write(
		map[string]any{"id": int64(1), "name": "a", "op": "insert"},
		map[string]any{"id": int64(2), "name": "b", "op": "insert"},
		map[string]any{"id": int64(3), "name": "b"},
		map[string]any{"id": int64(1), "name": "a2", "op": "update"},
		map[string]any{"id": int64(3), "op": "delete"},
		map[string]any{"id": int64(9), "name": "last"},
	)
	// The table applies updates on its own goroutine; wait for the last.
	testwait.Until(t, "the table to apply the last row", func() bool {
		rows, _ := tbl.Lookup(ctx, map[string]any{"id": int64(9)})
		return len(rows) == 1
	})
	tests := []struct {
		name  string
		keys  map[string]any
		names []any
	}{
		{"by key", map[string]any{"id": int64(1)}, []any{"a2"}},
		{"key as string", map[string]any{"id": "2"}, []any{"b"}},
		{"deleted", map[string]any{"id": int64(3)}, nil},
		{"missing", map[string]any{"id": int64(4)}, nil},
		{"other field scans", map[string]any{"name": "b"}, []any{"b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := tbl.Lookup(ctx, tc.keys)
			if err != nil {
				t.Fatal(err)
			}
			var names []any
			for _, r := range rows {
				names = append(names, r["name"])
			}
			if !reflect.DeepEqual(names, tc.names) {
				t.Fatalf("names = %v, want %v", names, tc.names)
			}
		})
	}
	t.Run("close stops the follower", func(t *testing.T) {
		if err := tbl.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if n := deps.Memory.Subscribers(); n != 0 {
			t.Fatalf("subscribers = %d", n)
		}
	})
}

// TestLookupUpdatePanic: a panic while the table applies an update ends
// its update goroutine, not the process; every later Lookup returns the
// panic (the runtime stops the joining rules with it) and publishers to
// the topic do not block on the dead table.
func TestLookupUpdatePanic(t *testing.T) {
	r, deps := setup(t)
	ctx := context.Background()
	src, err := r.NewLookup(Type, map[string]any{"datasource": "tbl/#", "key": "id", "bufferLength": int64(1)}, deps)
	if err != nil {
		t.Fatal(err)
	}
	tbl := src.(*Table)
	tbl.apply = func(m membus.Message) {
		if m.Data["id"] == int64(2) {
			panic("update bug")
		}
		tbl.update(m)
	}
	if err := tbl.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer tbl.Close(ctx)
	sink, err := r.NewSink(Type, map[string]any{"topic": "tbl/x"}, deps)
	if err != nil {
		t.Fatal(err)
	}
	// More rows than the table's buffer: the writes would block if the
	// dead table kept its subscription.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for i := range 10 {
		if err := sink.Write(wctx, &api.SinkMessage{Rows: []map[string]any{{"id": int64(i + 1)}}}); err != nil {
			t.Fatalf("write %d: %v", i+1, err)
		}
	}
	testwait.Until(t, "lookup to report the update goroutine's panic", func() bool {
		_, err = tbl.Lookup(ctx, map[string]any{"id": int64(1)})
		return err != nil
	})
	if !panics.Is(err) || !strings.Contains(err.Error(), "panic: memory table tbl/# update: update bug") {
		t.Fatalf("lookup error %v; want the update goroutine's panic", err)
	}
}

// TestSinkPublishesRowsTogether: the rows of one sink result go out as one
// message of several rows, as eKuiper's memory topics carry a list; memory
// sources read them as rows, lookup tables apply each.
func TestSinkPublishesRowsTogether(t *testing.T) {
	r, deps := setup(t)
	ctx := context.Background()
	sub, err := deps.Memory.Subscribe("out", 4)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	tbl, err := r.NewLookup(Type, map[string]any{"datasource": "out", "key": "id"}, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer tbl.Close(ctx)
	src, err := r.NewSource(Type, map[string]any{"datasource": "out", "format": "json"}, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer src.Close(ctx)
	sink, err := r.NewSink(Type, map[string]any{"topic": "out"}, deps)
	if err != nil {
		t.Fatal(err)
	}
	rows := []map[string]any{{"id": int64(1), "v": "a"}, {"id": int64(2), "v": "b"}}
	if err := sink.Write(ctx, &api.SinkMessage{Payload: []byte(`[{"id":1,"v":"a"},{"id":2,"v":"b"}]`)}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := sub.Receive(rctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Data != nil || !reflect.DeepEqual(m.Rows, rows) {
		t.Fatalf("message %+v, want the two rows together", m)
	}
	for i, got := range readN(t, src, 2) {
		if !reflect.DeepEqual(got.Data, rows[i]) || got.Meta["topic"] != "out" {
			t.Errorf("source row %d = %v %v, want %v", i, got.Data, got.Meta, rows[i])
		}
	}
	var a, b []map[string]any
	if !testwait.Poll(testwait.Limit, func() bool {
		a, _ = tbl.Lookup(ctx, map[string]any{"id": int64(1)})
		b, _ = tbl.Lookup(ctx, map[string]any{"id": int64(2)})
		return len(a) == 1 && len(b) == 1
	}) {
		t.Fatalf("table has %v and %v, want both rows", a, b)
	}
}
