package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rekuiper/rekuiper/bench"
	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// The backlog each run of BenchmarkClusterPartitionedRule reads: messages
// of splitBenchKeys devices (temperature = device number + 0.5, so the
// rule's filter passes half of them).
const (
	splitBenchMessages = 1_500_000
	splitBenchKeys     = 1200
)

// BenchmarkClusterPartitionedRule measures the throughput of a
// partitioned filter+aggregate rule reading a 6-partition Kafka backlog:
// one kuiperd pinned to one core (taskset) running all six tasks, against
// two kuiperd sharing a PostgreSQL catalog, each pinned to a core of its
// own and running three tasks. Each iteration runs both, one after the
// other, on fresh data folders and a fresh catalog, over the same backlog
// (produced once, read from the start by every run). kfake runs in the
// benchmark process, unpinned.
//
// Reported (medians over the iterations): msgs/s of each (from the rule's
// creation until every record was read), the ratios 2 nodes / 1 node of
// that and of the steady rate between 10 % and 90 % of the backlog, and
// msgs per second of kuiperd CPU (all nodes), which shows whether the
// nodes were short of CPU on a shared machine.
func BenchmarkClusterPartitionedRule(b *testing.B) {
	if _, err := exec.LookPath("taskset"); err != nil {
		b.Skip("taskset not found")
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(6, "bench-in"), kfake.SeedTopics(1, "bench-out"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()[0]
	produceKeyed(b, brokers, splitBenchMessages)
	pg := pgtest.Start(b)
	bin := buildDaemon(b)
	var one, two, steady1, steady2, eff1, eff2 []float64
	b.ResetTimer()
	for range b.N {
		r1 := splitRun(b, bin, pg.NewDatabase(b), brokers, []string{"0"})
		r2 := splitRun(b, bin, pg.NewDatabase(b), brokers, []string{"0", "1"})
		b.Logf("load %s: 1 node %.0f msg/s (steady %.0f; kuiperd %.2f µs CPU/msg, %.2f cores; kfake+bench %.2f µs/msg), "+
			"2 nodes %.0f msg/s (steady %.0f; kuiperd %.2f µs CPU/msg, %.2f cores; kfake+bench %.2f µs/msg): %.2f× (steady %.2f×)",
			loadAvg(), r1.rate, r1.steady, r1.cpuUS, r1.cores, r1.benchUS, r2.rate, r2.steady, r2.cpuUS, r2.cores, r2.benchUS, r2.rate/r1.rate, r2.steady/r1.steady)
		one, two = append(one, r1.rate), append(two, r2.rate)
		steady1, steady2 = append(steady1, r1.steady), append(steady2, r2.steady)
		eff1, eff2 = append(eff1, r1.rate/r1.cores), append(eff2, r2.rate/r2.cores)
	}
	b.StopTimer()
	b.ReportMetric(medianOf(one), "msgs/s-1node")
	b.ReportMetric(medianOf(two), "msgs/s-2nodes")
	b.ReportMetric(medianOf(two)/medianOf(one), "ratio")
	b.ReportMetric(medianOf(steady2)/medianOf(steady1), "steady-ratio")
	b.ReportMetric(medianOf(eff1), "msgs/core-s-1node")
	b.ReportMetric(medianOf(eff2), "msgs/core-s-2nodes")
}

type splitResult struct {
	rate, steady float64 // msgs/s overall and between 10 % and 90 %
	cpuUS        float64 // kuiperd CPU (all nodes) per message
	cores        float64 // kuiperd CPU over the run's wall time (all nodes)
	benchUS      float64 // this process's CPU (kfake, REST polling) per message
}

// splitRun starts one kuiperd per cpu on catalog db, creates the rule and
// waits until the nodes have read the whole backlog.
func splitRun(b *testing.B, bin, db, brokers string, cpus []string) splitResult {
	b.Helper()
	var nodes []*daemon
	for _, cpu := range cpus {
		// The default lease time (10 s): the single node's core is
		// saturated, so its lease renewals (PostgreSQL round trips)
		// take up to a second or more; with a 3 s lease it fenced its
		// own tasks every few seconds and they restarted from the
		// start of the backlog.
		nodes = append(nodes, startUnder(b, []string{"taskset", "-c", cpu}, bin, b.TempDir(), "KUIPER__BASIC__CATALOG="+db, "KUIPER__BASIC__LOGLEVEL=warn"))
	}
	ctx := context.Background()
	testwait.Within(b, 30*time.Second, "every node sees the others healthy", func() bool {
		for _, n := range nodes {
			var ms []map[string]any
			if err := n.c.JSON(ctx, "GET", "/cluster/nodes", nil, &ms); err != nil {
				return false
			}
			healthy := 0
			for _, m := range ms {
				if m["healthy"] == true {
					healthy++
				}
			}
			if healthy != len(nodes) {
				return false
			}
		}
		return true
	})
	c := nodes[0].c
	if err := c.JSON(ctx, "PUT", "/metadata/sources/kafka/confKeys/bench", map[string]any{"brokers": brokers, "keyField": "deviceId"}, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := c.CreateStream(ctx, "stream", `CREATE STREAM bench () WITH (DATASOURCE="bench-in", FORMAT="json", TYPE="kafka", CONF_KEY="bench")`); err != nil {
		b.Fatal(err)
	}
	cpu0 := nodesCPU(b, nodes)
	self0, err := bench.SelfCPU()
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	rule := fmt.Sprintf(`{"id":"agg","sql":"SELECT deviceId, count(*) AS n, avg(temperature) AS t FROM bench WHERE temperature > 600 GROUP BY deviceId, TUMBLINGWINDOW(ss, 1)",
		"actions":[{"kafka":{"brokers":%q,"topic":"bench-out","sendSingle":true,"batchSize":100}}]}`, brokers)
	if _, err := c.CreateRule(ctx, []byte(rule)); err != nil {
		b.Fatal(err)
	}
	var t10, t90 time.Time
	var n10, n90 int64
	per := make([]int64, len(nodes))
	done := make([]time.Duration, len(nodes))
	testwait.Within(b, 5*time.Minute, "the backlog read", func() bool {
		var total int64
		for i, n := range nodes {
			var st map[string]any
			if err := n.c.JSON(ctx, "GET", "/rules/agg/status", nil, &st); err != nil {
				return false
			}
			r := recordsIn(st)
			if r < per[i] {
				// A task restarted (and reads its partition again):
				// the figures would count its first records twice.
				b.Fatalf("%d node(s): node %d's records_in_total went back from %d to %d: a task restarted (lease lost?)", len(nodes), i, per[i], r)
			}
			if r != per[i] {
				per[i], done[i] = r, time.Since(t0)
			}
			total += per[i]
		}
		now := time.Now()
		if t10.IsZero() && total >= splitBenchMessages/10 {
			t10, n10 = now, total
		}
		if t90.IsZero() && total >= splitBenchMessages*9/10 {
			t90, n90 = now, total
		}
		return total >= splitBenchMessages
	})
	elapsed := time.Since(t0)
	cpu := nodesCPU(b, nodes) - cpu0
	for i := range nodes {
		b.Logf("%d node(s): node %d read %d records, the last at %s", len(nodes), i, per[i], done[i].Round(10*time.Millisecond))
	}
	self1, err := bench.SelfCPU()
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range nodes {
		n.stop()
	}
	return splitResult{
		rate:    splitBenchMessages / elapsed.Seconds(),
		steady:  float64(n90-n10) / t90.Sub(t10).Seconds(),
		cpuUS:   float64(cpu.Microseconds()) / splitBenchMessages,
		cores:   cpu.Seconds() / elapsed.Seconds(),
		benchUS: float64((self1 - self0).Microseconds()) / splitBenchMessages,
	}
}

// produceKeyed produces n bench payloads keyed by their deviceId, so that
// the default partitioner puts each device in one partition.
func produceKeyed(b *testing.B, brokers string, n int64) {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.DefaultProduceTopic("bench-in"), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	var failed atomic.Int64
	ctx := context.Background()
	for seq := range n {
		key := "d" + strconv.FormatInt(seq%splitBenchKeys, 10)
		cl.Produce(ctx, &kgo.Record{Key: []byte(key), Value: bench.PayloadKeys(seq, 0, splitBenchKeys)}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil || failed.Load() > 0 {
		b.Fatalf("produce the backlog: %v, %d failed", err, failed.Load())
	}
}

// nodesCPU sums the nodes' CPU time (taskset execs kuiperd in place).
func nodesCPU(b *testing.B, nodes []*daemon) time.Duration {
	b.Helper()
	var sum time.Duration
	for _, n := range nodes {
		d, err := bench.CPUTime(n.cmd.Process.Pid)
		if err != nil {
			b.Fatal(err)
		}
		sum += d
	}
	return sum
}

func loadAvg() string {
	bs, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(bs))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
