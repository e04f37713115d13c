package qualify

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
)

// clusterLeaseTime is cluster.leaseTime of the cluster tests.
const clusterLeaseTime = 3 * time.Second

// member is one kuiperd of a cluster test.
type member struct {
	*Daemon
	id string
}

func startMember(t *testing.T, bin, dir, catalogURL string) *member {
	t.Helper()
	d, err := NewDaemon(bin, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	d.Env = []string{"KUIPER__BASIC__CATALOG=" + catalogURL, "KUIPER__CLUSTER__LEASETIME=" + clusterLeaseTime.String()}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Kill)
	var info map[string]any
	if _, err := d.Do(http.MethodGet, "/", nil, &info); err != nil {
		t.Fatal(err)
	}
	id, _ := info["node"].(string)
	if id == "" {
		t.Fatalf("GET / names no node: %v", info)
	}
	return &member{Daemon: d, id: id}
}

// runs returns the rule's status when m itself runs it: the status names
// m, says running and carries the source metrics only the running node
// has.
func (m *member) runs(rule string) (map[string]any, bool) {
	st, err := m.RuleStatus(rule)
	if err != nil || st["node"] != m.id || st["status"] != "running" {
		return nil, false
	}
	for k := range st {
		if strings.HasPrefix(k, "source_") {
			return st, true
		}
	}
	return nil, false
}

// ownerOf polls until one of ms runs rule, within limit.
func ownerOf(ms []*member, rule string, limit time.Duration) (*member, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		for _, m := range ms {
			if _, ok := m.runs(rule); ok {
				return m, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("no node runs rule %s within %s", rule, limit)
}

// checkpointID is the id of the last checkpoint m completed for rule, 0
// when none (or m does not run it).
func (m *member) checkpointID(rule string) int64 {
	st, ok := m.runs(rule)
	if !ok {
		return 0
	}
	return int64(asFloat(st["checkpoint_last_id"]))
}

// TestClusterFailoverKafka: three kuiperd share one PostgreSQL catalog; a
// rule (event-time 1-second tumbling window, count and sum per key) reads
// a Kafka topic fed at a steady pace and writes a Kafka topic. The node
// running the rule is killed with SIGKILL three times, and restarted; each
// time another node takes the rule over, restores the checkpoint the
// killed node saved in PostgreSQL and rewinds the source to it (its
// checkpoint numbering continues after the killed node's). At qos 1 no
// window is missing and every result is exact (identical repeats
// allowed); at qos 2 a read_committed consumer sees every window exactly
// once.
func TestClusterFailoverKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level cluster crash test; run without -short")
	}
	bin := kuiperd(t)
	for _, qos := range []int{1, 2} {
		t.Run(fmt.Sprintf("qos%d", qos), func(t *testing.T) {
			runClusterFailover(t, bin, qos, 3, uint64(qos))
		})
	}
}

func runClusterFailover(t *testing.T, bin string, qos, kills int, seed uint64) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	brokers := strings.Join(broker.ListenAddrs(), ",")
	db := pgtest.Start(t).NewDatabase(t)
	root := t.TempDir()
	var ms []*member
	for i := range 3 {
		ms = append(ms, startMember(t, bin, filepath.Join(root, fmt.Sprintf("n%d", i)), db))
	}

	const (
		n      = 4000
		keys   = 10
		base   = int64(1700000000000)
		stepMS = 10
	)
	recs := GenerateRecords(n, keys, base, stepMS)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	produced := make(chan error, 1)
	go func() { produced <- produce(ctx, brokers, recs, 5*time.Millisecond) }()

	for _, step := range []struct {
		path string
		body any
	}{
		{"/streams", map[string]any{"sql": `CREATE STREAM src (seq BIGINT, key STRING, v BIGINT, ts BIGINT) WITH (DATASOURCE="in", TYPE="kafka", FORMAT="json", TIMESTAMP="ts", EXTRA="{\"brokers\":\"` + brokers + `\"}")`}},
		{"/rules", map[string]any{
			"id":      "win",
			"sql":     "SELECT key, count(*) AS c, sum(v) AS s, window_start() AS ws FROM src GROUP BY key, TUMBLINGWINDOW(ss, 1)",
			"actions": []any{map[string]any{"kafka": map[string]any{"brokers": brokers, "topic": "out"}}},
			"options": map[string]any{"qos": qos, "checkpointInterval": "500ms", "isEventTime": true, "lateTolerance": "0s"},
		}},
	} {
		if _, err := ms[0].Do(http.MethodPost, step.path, step.body, nil); err != nil {
			t.Fatal(err)
		}
	}

	rng := rand.New(rand.NewPCG(seed, 17))
	var failovers []time.Duration
	for i := range kills {
		owner, err := ownerOf(ms, "win", 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		// Let the owner complete two checkpoints of its own (so that a
		// node starting from nothing would number below it), then run on.
		floor := owner.checkpointID("win")
		waitUntil(t, fmt.Sprintf("kill %d: %s completes two checkpoints", i+1, owner.id), 30*time.Second, func() bool {
			return owner.checkpointID("win") >= floor+2
		})
		time.Sleep(time.Duration(300+rng.IntN(1000)) * time.Millisecond)
		last := owner.checkpointID("win")
		owner.Kill()
		killed := time.Now()
		var rest []*member
		for _, m := range ms {
			if m != owner {
				rest = append(rest, m)
			}
		}
		next, err := ownerOf(rest, "win", 30*time.Second)
		if err != nil {
			t.Fatalf("kill %d of %s: %v", i+1, owner.id, err)
		}
		failover := time.Since(killed)
		failovers = append(failovers, failover)
		// The new owner continues the killed node's checkpoints: its
		// first one is numbered after the killed node's last, as only a
		// restore from the shared store makes it.
		var first int64
		waitUntil(t, fmt.Sprintf("kill %d: %s completes a checkpoint", i+1, next.id), 30*time.Second, func() bool {
			first = next.checkpointID("win")
			return first > 0
		})
		if first <= last {
			t.Fatalf("kill %d: %s's first checkpoint is %d, not after %s's %d: it did not restore the shared checkpoint", i+1, next.id, first, owner.id, last)
		}
		t.Logf("kill %d: %s killed after its checkpoint %d; %s runs the rule %s later", i+1, owner.id, last, next.id, failover.Round(time.Millisecond))
		if err := owner.Start(ctx); err != nil {
			t.Fatalf("restart %s: %v", owner.id, err)
		}
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	expected := ExpectedWindows(recs, 1000)
	observed := consumeOut(t, brokers, qos == 2, len(expected), 60*time.Second)
	rep := CompareWindows(expected, observed, 0)
	slices.Sort(failovers)
	t.Logf("qos %d, %d kills of the owner: failover %v (lease time %s); windows %+v", qos, kills, failovers, clusterLeaseTime, rep)
	if !rep.OK() {
		t.Fatalf("windows not exact: %+v", rep)
	}
	if qos == 2 && rep.Duplicates != 0 {
		t.Fatalf("qos 2: %d windows delivered twice: %+v", rep.Duplicates, rep)
	}
}

// consumeOut reads topic "out" (read_committed when committed) until want
// distinct windows arrived and the topic stays quiet for 5s, or limit.
func consumeOut(t *testing.T, brokers string, committed bool, want int, limit time.Duration) map[WindowKey][]WindowValue {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics("out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
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
			rows, ok := parseRows(r.Value)
			if !ok {
				var one resultRow
				if json.Unmarshal(r.Value, &one) != nil {
					t.Errorf("unreadable result %q", r.Value)
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

func waitUntil(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
