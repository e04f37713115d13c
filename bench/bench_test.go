package bench

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

func TestPayload(t *testing.T) {
	for _, tc := range []struct {
		seq, ts int64
		dev     string
		temp    float64
	}{
		{0, 1, "d0", 0.5},
		{149, 1700000000000000000, "d49", 49.5},
		{12345, 42, "d45", 45.5},
	} {
		t.Run(tc.dev, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(Payload(tc.seq, tc.ts), &m); err != nil {
				t.Fatal(err)
			}
			if len(m) != 4 || m["deviceId"] != tc.dev || m["temperature"] != tc.temp ||
				int64(m["seq"].(float64)) != tc.seq {
				t.Fatalf("payload %v", m)
			}
			if ts, ok := IntField(Payload(tc.seq, tc.ts), "ts"); !ok || ts != tc.ts {
				t.Fatalf("ts %d %v, want %d", ts, ok, tc.ts)
			}
		})
	}
}

func TestIntField(t *testing.T) {
	for _, tc := range []struct {
		name, in, key string
		want          int64
		ok            bool
	}{
		{"first", `{"seq":12,"ts":34}`, "seq", 12, true},
		{"last", `{"seq":12,"ts":34}`, "ts", 34, true},
		{"spaces", `{"seq" : 7 }`, "seq", 7, true},
		{"negative", `{"c":-3}`, "c", -3, true},
		{"float part ignored", `{"c":5.0}`, "c", 5, true},
		{"value that looks like key", `{"deviceId":"c","c":9}`, "c", 9, true},
		{"missing", `{"seq":12}`, "ts", 0, false},
		{"string value", `{"ts":"x"}`, "ts", 0, false},
		{"prefix key", `{"tsx":1}`, "ts", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := IntField([]byte(tc.in), tc.key)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("IntField(%s, %s) = %d, %v; want %d, %v", tc.in, tc.key, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestExpected(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sc      Scenario
		n       int64
		want    int64
		perRule map[int]int64
	}{
		{"filter half", Scenario{Rules: 1}, 1000, 500, nil},
		{"filter partial", Scenario{Rules: 1}, 160, 50 + 10, nil}, // seq 50..99 and 150..159
		{"window all", Scenario{Rules: 1, Window: true}, 777, 777, nil},
		{"direct all", Scenario{Direct: true}, 5, 5, nil},
		{"rules100", Scenario{Rules: 100}, 250, 250, map[int]int64{0: 3, 49: 3, 50: 2, 99: 2}},
		{"rules1000", Scenario{Rules: 1000, Keys: 1000}, 2500, 2500, map[int]int64{0: 3, 499: 3, 500: 2, 999: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, per := expected(tc.sc, tc.n)
			if got != tc.want {
				t.Fatalf("expected = %d, want %d", got, tc.want)
			}
			for i, w := range tc.perRule {
				if per[i] != w {
					t.Errorf("rule %d: %d, want %d", i, per[i], w)
				}
			}
		})
	}
}

func TestPercentiles(t *testing.T) {
	lat := make([]int64, 0, 100)
	for i := 100; i >= 1; i-- {
		lat = append(lat, int64(i)*int64(time.Millisecond))
	}
	p50, p99, mx := percentiles(lat)
	if p50 != 50 || p99 != 99 || mx != 100 {
		t.Fatalf("p50 %v p99 %v max %v", p50, p99, mx)
	}
	if a, b, c := percentiles(nil); a != 0 || b != 0 || c != 0 {
		t.Fatal("empty input must give zeros")
	}
}

func TestProcReaders(t *testing.T) {
	// Burn some CPU so the reading is above zero.
	deadline := time.Now().Add(50 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	cpu, err := CPUTime(os.Getpid())
	if err != nil || cpu <= 0 {
		t.Fatalf("CPUTime = %v, %v", cpu, err)
	}
	m, err := ReadMemory(os.Getpid())
	if err != nil || m.RSS <= 0 || m.Peak < m.RSS {
		t.Fatalf("ReadMemory = %+v, %v", m, err)
	}
	if _, err := CPUTime(-1); err == nil {
		t.Fatal("CPUTime of a missing process must fail")
	}
}

func TestKafkaProducerAndConsumer(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := strings.Join(c.ListenAddrs(), ",")
	cons, err := NewKafkaConsumer(brokers, "in")
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx := context.Background()
	ps, err := ProduceKafka(ctx, brokers, "in", 0, 300)
	if err != nil || ps.Sent != 300 || ps.Errors != 0 {
		t.Fatalf("produced %+v, %v", ps, err)
	}
	paced, err := ProduceKafka(ctx, brokers, "in", 2000, 0)
	if err != nil || paced.Sent != 0 {
		t.Fatalf("empty paced run: %+v, %v", paced, err)
	}
	testwait.Poll(20*time.Second, func() bool { return cons.Received() >= 300 })
	st := cons.Stats()
	if st.Unique != 300 || st.Duplicates != 0 || st.Malformed != 0 || len(st.Latencies) != 300 {
		t.Fatalf("consumed %d distinct, %d duplicates, %d malformed", st.Unique, st.Duplicates, st.Malformed)
	}
}
