package qualify

import (
	"context"
	"database/sql"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// TestKafkaExactlyOnce: Kafka → rule (event-time 1-second tumbling window,
// count and sum per key) → Kafka at qos 2, with kuiperd killed by SIGKILL
// ten times while a producer feeds the input topic at a steady pace. A
// read_committed consumer of the output topic must see every window result
// exactly once: no window missing, none wrong, none twice.
func TestKafkaExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level crash test; run without -short")
	}
	d, brokers, recs := kafkaUnderKills(t, "eo", []string{"in", "out"}, 11, 13, func(brokers string) map[string]any {
		return map[string]any{"kafka": map[string]any{"brokers": brokers, "topic": "out"}}
	})
	expected := ExpectedWindows(recs, 1000)
	observed := consumeCommitted(t, brokers, len(expected), 60*time.Second)
	rep := CompareWindows(expected, observed, 0)
	t.Logf("kafka exactly-once after 10 kills: %+v", rep)
	if !rep.OK() || rep.Duplicates != 0 {
		t.Fatalf("not exactly once: %+v\n%s", rep, d.Output())
	}
}

// kafkaUnderKills runs the pipeline of the Kafka tests: a producer feeds
// the topic "in" of a kfake cluster (seeded with topics, "in" among them)
// at a steady pace with 6000 generated records; in a kuiperd, rule id
// computes an event-time 1-second tumbling window with count and sum per
// key over it at qos 2 and writes to the action sink(brokers). kuiperd is
// killed with SIGKILL ten times meanwhile (kill moments drawn from seed1
// and seed2) and restarted. It returns once every record was produced:
// the running daemon, the brokers and the records.
func kafkaUnderKills(t *testing.T, id string, topics []string, seed1, seed2 uint64, sink func(brokers string) map[string]any) (*Daemon, string, []Record) {
	t.Helper()
	bin := kuiperd(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := strings.Join(cluster.ListenAddrs(), ",")
	recs := GenerateRecords(6000, 10, 1700000000000, 10)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	produced := make(chan error, 1)
	go func() { produced <- produce(ctx, brokers, recs, onePartition, 4*time.Millisecond) }()

	d, err := NewDaemon(bin, filepath.Join(t.TempDir(), "kuiperd"), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Kill)
	for _, step := range []struct {
		method, path string
		body         any
	}{
		{http.MethodPost, "/streams", map[string]any{"sql": `CREATE STREAM src (seq BIGINT, key STRING, v BIGINT, ts BIGINT) WITH (DATASOURCE="in", TYPE="kafka", FORMAT="json", TIMESTAMP="ts", EXTRA="{\"brokers\":\"` + brokers + `\"}")`}},
		{http.MethodPost, "/rules", map[string]any{
			"id":      id,
			"sql":     "SELECT key, count(*) AS c, sum(v) AS s, window_start() AS ws FROM src GROUP BY key, TUMBLINGWINDOW(ss, 1)",
			"actions": []any{sink(brokers)},
			"options": map[string]any{"qos": 2, "checkpointInterval": "1s", "isEventTime": true, "lateTolerance": "0s"},
		}},
	} {
		if _, err := d.Do(step.method, step.path, step.body, nil); err != nil {
			t.Fatal(err)
		}
	}
	killAndRestart(t, d, rand.New(rand.NewPCG(seed1, seed2)), 10)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	return d, brokers, recs
}

// consumeCommitted reads topic "out" with read_committed isolation until
// want distinct windows arrived and the topic stays quiet, or the limit.
func consumeCommitted(t *testing.T, brokers string, want int, limit time.Duration) map[WindowKey][]WindowValue {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics("out"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[WindowKey][]WindowValue{}
	deadline := time.Now().Add(limit)
	quietSince := time.Now()
	for time.Now().Before(deadline) {
		fctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(fctx)
		cancel()
		got := 0
		fs.EachRecord(func(r *kgo.Record) {
			got++
			var rows []resultRow
			if err := json.Unmarshal(r.Value, &rows); err != nil {
				var one resultRow
				if json.Unmarshal(r.Value, &one) != nil {
					return
				}
				rows = []resultRow{one}
			}
			for _, row := range rows {
				k := WindowKey{Key: row.Key, Start: row.WS}
				out[k] = append(out[k], WindowValue{Count: row.C, Sum: row.S})
			}
		})
		if got > 0 {
			quietSince = time.Now()
		}
		if len(out) >= want && time.Since(quietSince) > 5*time.Second {
			break
		}
	}
	return out
}

// TestKafkaToPostgresExactlyOnce is the same pipeline with a PostgreSQL
// sink at qos 2: each checkpoint's rows are written in one transaction with
// the checkpoint id, so no window row may appear twice after ten SIGKILLs.
func TestKafkaToPostgresExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level crash test; run without -short")
	}
	pg := pgtest.Start(t)
	db, err := sql.Open("pgx", pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE out (key TEXT, c BIGINT, s BIGINT, ws BIGINT)`); err != nil {
		t.Fatal(err)
	}
	d, _, recs := kafkaUnderKills(t, "pg", []string{"in"}, 17, 19, func(string) map[string]any {
		return map[string]any{"sql": map[string]any{"url": pg.URL, "table": "out"}}
	})
	expected := ExpectedWindows(recs, 1000)
	var observed map[WindowKey][]WindowValue
	if testwait.Poll(60*time.Second, func() bool {
		observed = readTable(t, db)
		return len(observed) >= len(expected)
	}) {
		// Not a wait for a condition: a late duplicate, which must not
		// come, would show up within this time.
		time.Sleep(3 * time.Second)
		observed = readTable(t, db)
	}
	rep := CompareWindows(expected, observed, 0)
	t.Logf("kafka to postgres exactly-once after 10 kills: %+v", rep)
	if !rep.OK() || rep.Duplicates != 0 {
		t.Fatalf("duplicate or missing rows: %+v\n%s", rep, d.Output())
	}
}

func readTable(t *testing.T, db *sql.DB) map[WindowKey][]WindowValue {
	t.Helper()
	rows, err := db.Query(`SELECT key, c, s, ws FROM out`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[WindowKey][]WindowValue{}
	for rows.Next() {
		var k string
		var c, s, ws int64
		if err := rows.Scan(&k, &c, &s, &ws); err != nil {
			t.Fatal(err)
		}
		key := WindowKey{Key: k, Start: ws}
		out[key] = append(out[key], WindowValue{Count: c, Sum: s})
	}
	return out
}
