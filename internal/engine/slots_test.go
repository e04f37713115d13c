package engine

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/mqtt"
	"github.com/rekuiper/rekuiper/internal/connector/mqtt/mqtttest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// payloadSink records payloads and whether they came with rows; its
// PayloadOnly (api.PayloadOnly) reports payloadOnly.
type payloadSink struct {
	payloadOnly bool
	mu          sync.Mutex
	got         []string
	withRows    int
}

func (s *payloadSink) Connect(context.Context) error { return nil }
func (s *payloadSink) Close(context.Context) error   { return nil }
func (s *payloadSink) PayloadOnly() bool             { return s.payloadOnly }
func (s *payloadSink) Write(_ context.Context, m *api.SinkMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, string(m.Payload))
	if m.Rows != nil {
		s.withRows++
	}
	return nil
}

func (s *payloadSink) wait(t *testing.T, n int) ([]string, int) {
	t.Helper()
	var got []string
	var rows int
	// On a timeout the caller's checks say what is missing.
	testwait.Poll(testwait.Limit, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		got, rows = append([]string(nil), s.got...), s.withRows
		return len(got) >= n
	})
	return got, rows
}

// TestSlotRowsThroughSinks runs rules whose projection emits rows in slots
// through sinks that take them (payload only: no rows, reused buffers) and
// sinks that do not (their properties need maps, or they read rows), and
// checks every payload.
func TestSlotRowsThroughSinks(t *testing.T) {
	tests := []struct {
		name, sql, props string
		payloadOnly      bool
		want             []string
		wantRows         bool // messages carry rows (the map path)
	}{
		{name: "array", sql: "SELECT v, v * 2 AS d FROM s WHERE v > 1", props: `{}`, payloadOnly: true,
			want: []string{`[{"d":4,"v":2}]`, `[{"d":6,"v":3}]`}},
		{name: "sendSingle", sql: "SELECT v, v * 2 AS d FROM s WHERE v > 1", props: `{"sendSingle":true}`, payloadOnly: true,
			want: []string{`{"d":4,"v":2}`, `{"d":6,"v":3}`}},
		{name: "null omitted", sql: "SELECT v, CASE WHEN v > 2 THEN v END AS c FROM s", props: `{}`, payloadOnly: true,
			want: []string{`[{"v":1}]`, `[{"v":2}]`, `[{"c":3,"v":3}]`}},
		{name: "omitIfEmpty", sql: "SELECT CASE WHEN v > 2 THEN v END AS c FROM s", props: `{"omitIfEmpty":true,"sendSingle":true}`, payloadOnly: true,
			want: []string{`{"c":3}`}},
		{name: "fields", sql: "SELECT v, v * 2 AS d FROM s WHERE v > 1", props: `{"fields":["d","x"]}`, payloadOnly: true,
			want: []string{`[{"d":4,"x":null}]`, `[{"d":6,"x":null}]`}},
		{name: "excludeFields", sql: "SELECT v, v * 2 AS d FROM s WHERE v > 1", props: `{"excludeFields":["v"],"sendSingle":true}`, payloadOnly: true,
			want: []string{`{"d":4}`, `{"d":6}`}},
		{name: "dataField needs maps", sql: "SELECT v, v * 2 AS d FROM s WHERE v > 1", props: `{"dataField":"d"}`, payloadOnly: true,
			want: []string{`4`, `6`}, wantRows: true},
		{name: "template needs maps", sql: "SELECT v FROM s WHERE v > 1", props: `{"sendSingle":true,"dataTemplate":"v={{.v}}"}`, payloadOnly: true,
			want: []string{`v=2`, `v=3`}, wantRows: true},
		{name: "sink reads rows", sql: "SELECT v FROM s WHERE v > 1", props: `{}`,
			want: []string{`[{"v":2}]`, `[{"v":3}]`}, wantRows: true},
		{name: "wildcard", sql: "SELECT * FROM s WHERE v > 1", props: `{}`, payloadOnly: true,
			want: []string{`[{"v":2}]`, `[{"v":3}]`}, wantRows: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			sink := &payloadSink{payloadOnly: tc.payloadOnly}
			if err := e.runner.cfg.Registry.RegisterSink("payloads", connector.Spec{}, func(map[string]any, connector.Deps) (api.Sink, error) {
				return sink, nil
			}); err != nil {
				t.Fatal(err)
			}
			startRule(t, e, `{"id":"r","sql":"`+tc.sql+`","actions":[{"payloads":`+tc.props+`}]}`)
			e.publish(t, 1, 2, 3)
			got, withRows := sink.wait(t, len(tc.want))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("payloads %q, want %q", got, tc.want)
			}
			if tc.wantRows && withRows != len(got) || !tc.wantRows && withRows != 0 {
				t.Errorf("%d of %d messages carried rows, want rows: %v", withRows, len(got), tc.wantRows)
			}
		})
	}
}

// TestSlotRowsTwoSinks checks that one emission in slots reaches a sink
// that takes slots and one that takes maps, both whole, many times over
// (the emission is released only after both).
func TestSlotRowsTwoSinks(t *testing.T) {
	e := newTestEnv(t)
	sink := &payloadSink{payloadOnly: true}
	if err := e.runner.cfg.Registry.RegisterSink("payloads", connector.Spec{}, func(map[string]any, connector.Deps) (api.Sink, error) {
		return sink, nil
	}); err != nil {
		t.Fatal(err)
	}
	startRule(t, e, `{"id":"r","sql":"SELECT v, v + 1 AS w FROM s","actions":[{"payloads":{"sendSingle":true}},{"counting":{}}]}`)
	const n = 500
	var want, wantArr []string
	for i := range int64(n) {
		e.publish(t, i)
		want = append(want, fmt.Sprintf(`{"v":%d,"w":%d}`, i, i+1))
		wantArr = append(wantArr, fmt.Sprintf(`[{"v":%d,"w":%d}]`, i, i+1))
	}
	got, withRows := sink.wait(t, n)
	if !reflect.DeepEqual(got, want) || withRows != 0 {
		t.Fatalf("slot sink: %d with rows, payloads %q", withRows, got)
	}
	arr, _ := e.out.wait(t, n)
	if !reflect.DeepEqual(arr, wantArr) {
		t.Fatalf("map sink: payloads %q", arr)
	}
}

// TestMQTTSinkFromSlots runs a rule into an MQTT sink with a fixed topic
// at qos 0, which takes slot rows (payloads encoded into a reused buffer),
// and reads what Mosquitto delivers: every payload whole, in order.
func TestMQTTSinkFromSlots(t *testing.T) {
	m := mqtttest.StartMosquitto(t)
	url := m.URL("plain")
	e := newTestEnv(t)
	pool := mqtt.NewPool(discard(), clock.Wall{})
	t.Cleanup(func() { _ = pool.Close() })
	props, err := mqtt.SourceSpec().Validate(map[string]any{"server": url, "datasource": "out"})
	if err != nil {
		t.Fatal(err)
	}
	src, err := mqtt.NewSource(pool, props, connector.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := src.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close(context.Background()) })
	testwait.Until(t, "the MQTT source to connect", func() bool {
		st, _, _, _ := src.Status()
		return st == mqtt.StateConnected
	})
	run := startRule(t, e, `{"id":"r","sql":"SELECT v, v * 2 AS d FROM s WHERE v > 1",
		"actions":[{"mqtt":{"server":"`+url+`","topic":"out","sendSingle":true}}]}`)
	if !run.sinks[0].slots {
		t.Fatal("the mqtt sink does not take slot rows")
	}
	const n = 200
	for i := range int64(n) {
		e.publish(t, i)
	}
	for i := int64(2); i < n; i++ {
		msg, err := src.Read(ctx)
		if err != nil {
			t.Fatalf("read message for v=%d: %v", i, err)
		}
		if want := fmt.Sprintf(`{"d":%d,"v":%d}`, 2*i, i); string(msg.Payload) != want {
			t.Fatalf("payload %q, want %q", msg.Payload, want)
		}
	}
}
