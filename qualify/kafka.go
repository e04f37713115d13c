package qualify

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produce writes the records as JSON to topic "in", one every pace,
// keyed by their Key, each into partition part(r).
func produce(ctx context.Context, brokers string, recs []Record, part func(Record) int, pace time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.DefaultProduceTopic("in"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	tick := time.NewTicker(pace)
	defer tick.Stop()
	for _, r := range recs {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		b, _ := json.Marshal(r)
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(r.Key), Partition: int32(part(r)), Value: b}).FirstErr(); err != nil {
			return err
		}
	}
	return nil
}

// onePartition puts every record in partition 0.
func onePartition(Record) int { return 0 }

// consumeWindows reads the window results of topic "out" (read_committed
// when committed) until want distinct windows arrived and the topic stayed
// quiet for 5 s, or limit passed.
func consumeWindows(ctx context.Context, brokers string, committed bool, want int, limit time.Duration) (map[WindowKey][]WindowValue, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics("out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	out := map[WindowKey][]WindowValue{}
	deadline := time.Now().Add(limit)
	quietSince := time.Now()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(fctx)
		cancel()
		got := 0
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			got++
			rows, ok := parseRows(r.Value)
			if !ok {
				var one resultRow
				if json.Unmarshal(r.Value, &one) != nil {
					bad = fmt.Errorf("unreadable result %q", r.Value)
					return
				}
				rows = []resultRow{one}
			}
			for _, row := range rows {
				k := WindowKey{Key: row.Key, Start: row.WS}
				out[k] = append(out[k], WindowValue{Count: row.C, Sum: row.S})
			}
		})
		if bad != nil {
			return out, bad
		}
		if got > 0 {
			quietSince = time.Now()
		}
		if len(out) >= want && time.Since(quietSince) > 5*time.Second {
			break
		}
	}
	return out, ctx.Err()
}
