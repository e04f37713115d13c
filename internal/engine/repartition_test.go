package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// TestRepartitionStages runs both stages of a repartitioned rule in one
// process at qos 2: the first stage's tasks, one per partition of a topic
// whose records are keyed by nothing in particular, write every record
// that passes the rule's WHERE to the internal topic, in transactions,
// keyed by the rule's GROUP BY field so that each device's records are in
// one partition; the second stage's tasks, one per partition of the
// internal topic, write exactly the windows of the input, skipping
// internal records of another generation.
func TestRepartitionStages(t *testing.T) {
	const (
		parts   = 3
		devices = 6
		windows = 4
		per     = 5 // records per device and window
	)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	e := newTestEnv(t)
	kc := newKafkaCluster(t, kfake.SeedTopics(parts, "in"))
	ctx := context.Background()
	e.confKey(t, "kafka", "k", map[string]any{"brokers": kc.ListenAddrs()[0]})
	e.putStream(t, "readings", `CREATE STREAM readings (dev STRING, v BIGINT, ts BIGINT) WITH (TYPE="kafka", DATASOURCE="in", CONF_KEY="k", TIMESTAMP="ts")`)
	prod := newKafkaClient(t, kc, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// Every device's records are spread over every partition, keyed by a
	// sequence number; one in five has a negative v, which WHERE drops.
	want := map[string]bool{}
	var recs []*kgo.Record
	passed := 0
	for dev := range devices {
		for w := range windows {
			n, total := 0, 0
			for i := range per {
				v := dev*100 + w*10 + i
				if i == 2 {
					v = -1
				} else {
					n, total = n+1, total+v
					passed++
				}
				b, _ := json.Marshal(map[string]any{"dev": fmt.Sprintf("d%d", dev), "v": v, "ts": base + int64(w)*1000 + int64(i)*100})
				recs = append(recs, &kgo.Record{Topic: "in", Partition: int32(len(recs) % parts), Key: fmt.Appendf(nil, "%d", len(recs)), Value: b})
			}
			want[fmt.Sprintf(`{"dev":"d%d","n":%d,"total":%d,"ws":%d}`, dev, n, total, base+int64(w)*1000)] = true
		}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	def := mustParseDef(t, `{"id":"agg","sql":"SELECT dev, count(*) AS n, sum(v) AS total, window_start() AS ws FROM readings WHERE v >= 0 GROUP BY dev, TUMBLINGWINDOW(ss, 1)",
		"actions":[{"counting":{"sendSingle":true}}],
		"options":{"qos":2,"checkpointInterval":"50ms","isEventTime":true,"lateTolerance":"60s"}}`)
	sp, err := e.runner.Split(ctx, def)
	if err != nil {
		t.Fatal(err)
	}
	if sp.Repartition == nil || sp.Partitions != parts || sp.Repartition.Sources != parts {
		t.Fatalf("split %+v: want repartitioned into %d partitions", sp, parts)
	}
	for p := range parts {
		e.start(t, def.ForRepartition(sp, p))
	}

	// The internal topic, read_committed: every record that passed WHERE,
	// keyed by the JSON of its device, each device in one partition.
	cl := newKafkaClient(t, kc, kgo.ConsumeTopics(sp.Repartition.Topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	partOf := map[string]int32{}
	read := 0
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for read < passed {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			t.Fatalf("internal topic: read %d of %d records", read, passed)
		}
		fs.EachRecord(func(r *kgo.Record) {
			read++
			var m map[string]any
			if err := json.Unmarshal(r.Value, &m); err != nil {
				t.Fatalf("internal record %s: %v", r.Value, err)
			}
			dev, _ := m["dev"].(string)
			if string(r.Key) != `"`+dev+`"` {
				t.Errorf("internal record %s has key %s", r.Value, r.Key)
			}
			if v, _ := m["v"].(float64); v < 0 {
				t.Errorf("internal record %s did not pass WHERE", r.Value)
			}
			if _, ok := m["ts"]; !ok {
				t.Errorf("internal record %s lost its event time", r.Value)
			}
			if p, ok := partOf[dev]; ok && p != r.Partition {
				t.Errorf("device %s in partitions %d and %d of the internal topic", dev, p, r.Partition)
			}
			partOf[dev] = r.Partition
		})
	}
	if read != passed || len(partOf) != devices {
		t.Fatalf("internal topic: %d records of %d devices, want %d of %d", read, len(partOf), passed, devices)
	}

	// What an earlier generation of the first stage left, or anything
	// else in the internal topic, is not the rule's input.
	stray := fmt.Appendf(nil, `{"dev":"d0","v":1000000,"ts":%d}`, base)
	if err := prod.ProduceSync(ctx,
		&kgo.Record{Topic: sp.Repartition.Topic, Partition: partOf["d0"], Key: []byte(`"d0"`), Value: stray,
			Headers: []kgo.RecordHeader{{Key: rule.GenerationHeader, Value: []byte("0123456789abcdef")}}},
		&kgo.Record{Topic: sp.Repartition.Topic, Partition: partOf["d0"], Key: []byte(`"d0"`), Value: stray},
	).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for p := range parts {
		e.start(t, def.ForSplit(sp, p))
	}
	// One late record per device closes its windows.
	recs = recs[:0]
	for dev := range devices {
		b, _ := json.Marshal(map[string]any{"dev": fmt.Sprintf("d%d", dev), "v": 0, "ts": base + 3_600_000})
		recs = append(recs, &kgo.Record{Topic: "in", Partition: int32(dev % parts), Value: b})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	msgs, _ := e.out.wait(t, len(want))
	got := map[string]bool{}
	for _, m := range msgs {
		got[m] = true
	}
	if len(msgs) != len(want) || !maps.Equal(got, want) {
		t.Fatalf("second stage wrote %d windows:\n%v\nwant %d:\n%v", len(msgs), msgs, len(want), slices.Sorted(maps.Keys(want)))
	}
	// Once their checkpoints committed, the second stage's tasks purge
	// what they read from the internal topic.
	adm := kadm.NewClient(newKafkaClient(t, kc))
	var starts kadm.ListedOffsets
	if !testwait.Poll(testwait.Limit, func() bool {
		starts, err = adm.ListStartOffsets(ctx, sp.Repartition.Topic)
		purged := err == nil
		starts.Each(func(o kadm.ListedOffset) { purged = purged && o.Offset > 0 })
		return purged && len(starts[sp.Repartition.Topic]) == parts
	}) {
		t.Fatalf("internal topic not purged: start offsets %v, %v", starts, err)
	}
}
