package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// Partitioned rules: the input topic's partitions and the devices keyed
// into them (device i in partition i % partitions).
const (
	partTopicPartitions = 6
	partDevices         = 12
	partWindows         = 10 // one-second event-time windows per phase
	partPerWindow       = 4  // records per device and window
)

// partBase is the event time of the first window (a whole second).
var partBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// partKafka is a kfake broker with the input topic (6 partitions) and one
// output topic per run.
type partKafka struct {
	c    *kfake.Cluster
	addr string
	prod *kgo.Client
}

func newPartKafka(t *testing.T) *partKafka {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partTopicPartitions, "in"), kfake.SeedTopics(1, "out_split", "out_whole"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	return &partKafka{c: c, addr: addr, prod: prod}
}

// keyed puts device dev's records in partition dev % partTopicPartitions,
// keyed by device.
func keyed(dev int) (int32, []byte) {
	return int32(dev % partTopicPartitions), fmt.Appendf(nil, "d%02d", dev)
}

// produce writes the records of every device in the windows starting at
// event time from, each in the partition and under the key place gives
// its device; with flush, one record per device at from instead, which
// closes the windows before it.
func (k *partKafka) produce(t *testing.T, from int64, flush bool, place func(dev int) (partition int32, key []byte)) int {
	t.Helper()
	var recs []*kgo.Record
	add := func(dev int, ts int64, v int) {
		b, _ := json.Marshal(map[string]any{"device": fmt.Sprintf("d%02d", dev), "v": v, "ts": ts})
		part, key := place(dev)
		recs = append(recs, &kgo.Record{Topic: "in", Partition: part, Key: key, Value: b})
	}
	for dev := range partDevices {
		if flush {
			add(dev, from, 0)
			continue
		}
		for w := range partWindows {
			for i := range partPerWindow {
				add(dev, from+int64(w)*1000+int64(i)*200, dev*100+w*10+i+int(from%7))
			}
		}
	}
	if err := k.prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// rows reads every record of topic so far (read_committed) as canonical
// row strings; transaction markers (a sink at qos 2) are skipped.
func (k *partKafka) rows(t *testing.T, topic string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := endOffset(ctx, cl, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var read int64
	for read < ends {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %s: %v (read %d of %d)", topic, err, read, ends)
		}
		fs.EachRecord(func(r *kgo.Record) {
			read = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(r.Value))
			dec.UseNumber()
			if err := dec.Decode(&m); err != nil {
				t.Fatalf("%s: %v: %s", topic, err, r.Value)
			}
			out = append(out, fmt.Sprintf("%v|%v|%v|%v", m["device"], m["ws"], m["n"], m["total"]))
		})
	}
	return out
}

// endOffset is the end offset of the one-partition topic.
func endOffset(ctx context.Context, cl *kgo.Client, topic string) (int64, error) {
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok {
		return 0, fmt.Errorf("no end offset of %s", topic)
	}
	return o.Offset, o.Err
}

// setupAggRule creates, through d, the kafka confKey (with keyField, when
// not "", naming the field the records are keyed by), the stream over the
// input topic and the windowed GROUP BY device rule at qos writing to out.
func setupAggRule(t *testing.T, d *daemon, brokers, keyField, out string, qos int) {
	t.Helper()
	ctx := context.Background()
	conf := map[string]any{"brokers": brokers}
	if keyField != "" {
		conf["keyField"] = keyField
	}
	if err := d.c.JSON(ctx, "PUT", "/metadata/sources/kafka/confKeys/k", conf, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.CreateStream(ctx, "stream", `CREATE STREAM s (device STRING, v BIGINT, ts BIGINT) WITH (TYPE="kafka", DATASOURCE="in", FORMAT="json", CONF_KEY="k", TIMESTAMP="ts")`); err != nil {
		t.Fatal(err)
	}
	rule := map[string]any{
		"id":      "agg",
		"sql":     "SELECT device, count(*) AS n, sum(v) AS total, window_start() AS ws FROM s WHERE v >= 0 GROUP BY device, TUMBLINGWINDOW(ss, 1)",
		"actions": []any{map[string]any{"kafka": map[string]any{"brokers": brokers, "topic": out, "sendSingle": true}}},
		"options": map[string]any{"isEventTime": true, "lateTolerance": "60s", "qos": qos, "checkpointInterval": "500ms"},
	}
	b, _ := json.Marshal(rule)
	if _, err := d.c.CreateRule(ctx, b); err != nil {
		t.Fatal(err)
	}
}

// startPartRuns starts the two runs the partitioned-rule tests compare,
// over a fresh Kafka broker (newPartKafka): the aggregate rule
// (setupAggRule with keyField and qos) on a single daemon, whole, writing
// to out_whole, and on two nodes sharing a PostgreSQL catalog, a and b,
// created through a and writing to out_split.
func startPartRuns(t *testing.T, keyField string, qos int) (k *partKafka, whole *daemon, a, b *node) {
	t.Helper()
	k = newPartKafka(t)
	db := pgtest.Start(t).NewDatabase(t)
	bin := buildDaemon(t)
	whole = startDaemon(t, bin, t.TempDir())
	a, b = startNode(t, bin, db), startNode(t, bin, db)
	setupAggRule(t, whole, k.addr, keyField, "out_whole", qos)
	setupAggRule(t, a.daemon, k.addr, keyField, "out_split", qos)
	return k, whole, a, b
}

// ruleStatus returns rule agg's status as d answers it.
func ruleStatus(d *daemon) map[string]any {
	var st map[string]any
	d.c.JSON(context.Background(), "GET", "/rules/agg/status", nil, &st) //nolint:errcheck // polled
	return st
}

// recordsIn sums the source records counted in a status.
func recordsIn(st map[string]any) int64 {
	var n int64
	for k, v := range st {
		if strings.HasPrefix(k, "source_") && strings.HasSuffix(k, "_records_in_total") {
			f, _ := v.(float64)
			n += int64(f)
		}
	}
	return n
}

// taskNodes returns, from a status, the node of each running task.
func taskNodes(st map[string]any) map[string]string {
	out := map[string]string{}
	tasks, _ := st["tasks"].([]any)
	for _, x := range tasks {
		m, _ := x.(map[string]any)
		if m["status"] == "running" {
			out[fmt.Sprint(m["id"])] = fmt.Sprint(m["node"])
		}
	}
	return out
}

// TestClusterPartitionedRule: a windowed GROUP BY rule over a 6-partition
// Kafka topic keyed by its group key runs on two nodes as six tasks, three
// per node, and writes exactly the windows the same rule writes on a
// single node. Once a node is killed, its tasks resume on the other node
// after their leases expire, from their checkpoints in the shared
// database: every window is written once, with the single node's values.
func TestClusterPartitionedRule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs kuiperd")
	}
	k, whole, a, b := startPartRuns(t, "device", 1)

	var nodes map[string]string
	testwait.Within(t, 30*time.Second, "six tasks running, three on each node", func() bool {
		nodes = taskNodes(ruleStatus(b.daemon))
		per := map[string]int{}
		for _, n := range nodes {
			per[n]++
		}
		return len(nodes) == partTopicPartitions && per[a.id] == 3 && per[b.id] == 3
	})
	t.Logf("tasks: %v", nodes)
	// Each node sees the other's tasks as of its last placement pass.
	testwait.Within(t, 10*time.Second, "the split rule running, as each node answers", func() bool {
		return ruleStatus(a.daemon)["status"] == "running" && ruleStatus(b.daemon)["status"] == "running"
	})
	var wst map[string]any
	if wst = ruleStatus(whole); wst["tasks"] != nil || wst["status"] != "running" {
		t.Fatalf("single node: status %v, tasks %v: want running whole", wst["status"], wst["tasks"])
	}

	n1 := k.produce(t, partBase, false, keyed)
	// The single node reads the partitions interleaved: the windows may
	// close only once it has read them all.
	testwait.Within(t, 30*time.Second, "the single node read phase 1", func() bool { return recordsIn(ruleStatus(whole)) == int64(n1) })
	testwait.Within(t, 30*time.Second, "the tasks read phase 1", func() bool {
		return recordsIn(ruleStatus(a.daemon))+recordsIn(ruleStatus(b.daemon)) == int64(n1)
	})
	k.produce(t, partBase+3_600_000, true, keyed)
	want1 := partDevices * partWindows
	_, single := sameWindows(t, k, 30*time.Second, "phase 1", want1, false)
	checkWindows(t, single, partBase)

	// kill -9 the node that runs task agg#p0: its tasks move. Its tasks
	// first complete two more checkpoints, so that the last one holds the
	// windows they have written.
	victim, survivor := a, b
	if nodes["agg#p0"] == b.id {
		victim, survivor = b, a
	}
	waitCheckpoints(t, victim, 2)
	killed := victim.kill9(t)
	testwait.Within(t, 30*time.Second, "every task running on the survivor", func() bool {
		nodes = taskNodes(ruleStatus(survivor.daemon))
		for _, n := range nodes {
			if n != survivor.id {
				return false
			}
		}
		return len(nodes) == partTopicPartitions
	})
	t.Logf("tasks of %s running on %s %s after kill -9 (lease time %s)", victim.id, survivor.id, time.Since(killed).Round(100*time.Millisecond), testLeaseTime)

	n2 := k.produce(t, partBase+3_600_000+1000, false, keyed)
	testwait.Within(t, 30*time.Second, "the single node read phase 2", func() bool {
		return recordsIn(ruleStatus(whole)) == int64(n1+partDevices+n2)
	})
	k.produce(t, partBase+7_200_000, true, keyed)
	// Phase 2: the flush windows of phase 1 and the data windows.
	want := want1 + partDevices + partDevices*partWindows
	split, _ := sameWindows(t, k, 60*time.Second, "phase 2", want, true)
	// The moved tasks resumed from their checkpoints in the shared
	// database: nothing they had written before is written again.
	if len(split) != want {
		t.Fatalf("after the kill: %d windows written twice by the moved tasks (want 0: they resume from their shared checkpoints)", len(split)-want)
	}
}

// sameWindows waits up to within until the split run (out_split) and the
// single node (out_whole) have both written want windows, and fails unless
// they wrote the same windows. After a kill the split run may write a
// window twice: with rewrites, its distinct windows are compared. It
// returns the split run's rows, every one written, and the single node's,
// sorted.
func sameWindows(t *testing.T, k *partKafka, within time.Duration, phase string, want int, rewrites bool) (split, single []string) {
	t.Helper()
	windows := func(rows []string) []string {
		if rewrites {
			return distinct(rows)
		}
		return rows
	}
	testwait.Within(t, within, phase+" windows written by both runs", func() bool {
		split, single = k.rows(t, "out_split"), k.rows(t, "out_whole")
		return len(windows(split)) >= want && len(single) >= want
	})
	slices.Sort(split)
	slices.Sort(single)
	if got := windows(split); len(single) != want || !slices.Equal(got, single) {
		t.Fatalf("%s: split run wrote %d distinct windows (%d in all), single node %d (want %d); only split: %v; only single: %v",
			phase, len(distinct(split)), len(split), len(single), want, minus(got, single), minus(single, got))
	}
	return split, single
}

// waitCheckpoints waits until each task n runs has completed more
// checkpoints than when called.
func waitCheckpoints(t *testing.T, n *node, more float64) {
	t.Helper()
	before := taskCheckpoints(ruleStatus(n.daemon))
	testwait.Within(t, 30*time.Second, fmt.Sprintf("%v more checkpoints of the tasks on %s", more, n.id), func() bool {
		now := taskCheckpoints(ruleStatus(n.daemon))
		for id, c := range before {
			if now[id] < c+more {
				return false
			}
		}
		return len(before) > 0
	})
}

// taskCheckpoints returns, from a status, the completed checkpoints of
// each task the answering node runs.
func taskCheckpoints(st map[string]any) map[string]float64 {
	out := map[string]float64{}
	tasks, _ := st["tasks"].([]any)
	for _, x := range tasks {
		m, _ := x.(map[string]any)
		if met, ok := m["metrics"].(map[string]any); ok {
			n, _ := met["checkpoint_completed_total"].(float64)
			out[fmt.Sprint(m["id"])] = n
		}
	}
	return out
}

// checkWindows checks the single node's phase 1 windows against the input:
// each device has partWindows windows of partPerWindow records.
func checkWindows(t *testing.T, rows []string, from int64) {
	t.Helper()
	want := map[string]bool{}
	for dev := range partDevices {
		for w := range partWindows {
			total := 0
			for i := range partPerWindow {
				total += dev*100 + w*10 + i + int(from%7)
			}
			want[fmt.Sprintf("d%02d|%d|%d|%d", dev, from+int64(w)*1000, partPerWindow, total)] = true
		}
	}
	for _, r := range rows {
		if !want[r] {
			t.Errorf("unexpected window %s", r)
		}
		delete(want, r)
	}
	if len(want) > 0 {
		t.Errorf("missing windows: %v", slices.Sorted(maps.Keys(want)))
	}
}

func distinct(rows []string) []string {
	out := slices.Clone(rows)
	slices.Sort(out)
	return slices.Compact(out)
}
