package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rekuiper/rekuiper/internal/rule"
)

// TestSplit: which rules over kafka streams run as one task per partition,
// and why the others run whole.
func TestSplit(t *testing.T) {
	e := newTestEnv(t)
	kc := newKafkaCluster(t, kfake.SeedTopics(6, "six"), kfake.SeedTopics(1, "one"))
	ctx := context.Background()
	for key, props := range map[string]map[string]any{
		"keyed":   {"brokers": kc.ListenAddrs()[0], "keyField": "dev"},
		"plain":   {"brokers": kc.ListenAddrs()[0]},
		"pinned":  {"brokers": kc.ListenAddrs()[0], "keyField": "dev", "partition": 2},
		"unknown": {"brokers": kc.ListenAddrs()[0], "keyField": "dev"},
	} {
		e.confKey(t, "kafka", key, props)
	}
	for name, sql := range map[string]string{
		"k":  `CREATE STREAM k (dev STRING, v BIGINT) WITH (TYPE="kafka", DATASOURCE="six", CONF_KEY="keyed")`,
		"p":  `CREATE STREAM p (dev STRING, v BIGINT) WITH (TYPE="kafka", DATASOURCE="six", CONF_KEY="plain")`,
		"o":  `CREATE STREAM o (dev STRING, v BIGINT) WITH (TYPE="kafka", DATASOURCE="one", CONF_KEY="keyed")`,
		"x":  `CREATE STREAM x (dev STRING, v BIGINT) WITH (TYPE="kafka", DATASOURCE="six", CONF_KEY="pinned")`,
		"nt": `CREATE STREAM nt (dev STRING, v BIGINT) WITH (TYPE="kafka", DATASOURCE="missing", CONF_KEY="unknown")`,
		"pb": `CREATE STREAM pb (dev STRING, v BIGINT) WITH (TYPE="kafka", DATASOURCE="six", CONF_KEY="plain", FORMAT="delimited")`,
	} {
		e.putStream(t, name, sql)
	}
	for _, tc := range []struct {
		name, sql string
		parts     int
		keyed     bool
		reason    string // a part of the reason, when whole
	}{
		{"keyField", "SELECT dev, count(*) FROM k GROUP BY dev, TUMBLINGWINDOW(ss, 1)", 6, true, ""},
		{"keyField among others", "SELECT count(*) FROM k GROUP BY v, dev, HOPPINGWINDOW(ss, 2, 1)", 6, true, ""},
		{"meta key", "SELECT count(*) FROM p GROUP BY meta(key), TUMBLINGWINDOW(ss, 1)", 6, true, ""},
		{"analytic partitioned by key", "SELECT lag(v) OVER (PARTITION BY meta(key)) AS l FROM p GROUP BY meta(key), TUMBLINGWINDOW(ss, 1)", 6, true, ""},
		{"no key: repartitioned", "SELECT count(*) FROM p GROUP BY dev, TUMBLINGWINDOW(ss, 1)", 6, true, ""},
		{"other field: repartitioned", "SELECT count(*) FROM k GROUP BY v, TUMBLINGWINDOW(ss, 1)", 6, true, ""},
		{"group by expression", "SELECT count(*) FROM p GROUP BY lower(dev), TUMBLINGWINDOW(ss, 1)", 0, true, "does not include meta(key), and the stream names no keyField: the records of one group may be in several partitions; it is not repartitioned: GROUP BY lower(dev) is not a field"},
		{"group by unknown field", "SELECT count(*) FROM k GROUP BY w, TUMBLINGWINDOW(ss, 1)", 0, true, `keyField "dev"`},
		{"meta", "SELECT meta(topic) AS t, count(*) FROM p GROUP BY dev, TUMBLINGWINDOW(ss, 1)", 0, true, "reads meta()"},
		{"format", "SELECT count(*) FROM pb GROUP BY dev, TUMBLINGWINDOW(ss, 1)", 0, true, "format is delimited"},
		{"repartition analytic across keys", "SELECT lag(v) AS l FROM p GROUP BY dev, TUMBLINGWINDOW(ss, 1)", 0, true, "analytic function lag"},
		{"repartition analytic by the key", "SELECT lag(v) OVER (PARTITION BY dev) AS l FROM p GROUP BY dev, TUMBLINGWINDOW(ss, 1)", 6, true, ""},
		{"repartition pinned", "SELECT count(*) FROM x GROUP BY v, TUMBLINGWINDOW(ss, 1)", 0, true, "reads one partition"},
		{"count window", "SELECT count(*) FROM k GROUP BY dev, COUNTWINDOW(5)", 0, true, "spans the records of every key"},
		{"sliding window", "SELECT count(*) FROM k GROUP BY dev, SLIDINGWINDOW(ss, 5)", 0, true, "spans the records of every key"},
		{"limit", "SELECT dev, count(*) FROM k GROUP BY dev, TUMBLINGWINDOW(ss, 1) LIMIT 3", 0, true, "LIMIT"},
		{"analytic across keys", "SELECT lag(v) AS l FROM k GROUP BY dev, TUMBLINGWINDOW(ss, 1)", 0, true, "analytic function lag"},
		{"one partition", "SELECT count(*) FROM o GROUP BY dev, TUMBLINGWINDOW(ss, 1)", 0, true, "one partition"},
		{"pinned partition", "SELECT count(*) FROM x GROUP BY dev, TUMBLINGWINDOW(ss, 1)", 0, true, "one partition already"},
		{"no window", "SELECT dev FROM k", 0, false, "not a windowed GROUP BY"},
		{"not kafka", "SELECT count(*) FROM s GROUP BY v, TUMBLINGWINDOW(ss, 1)", 0, false, "not a windowed GROUP BY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := &rule.Def{ID: "r", SQL: tc.sql}
			sp, err := e.runner.Split(ctx, def)
			if err != nil {
				t.Fatal(err)
			}
			if sp.Partitions != tc.parts || sp.Keyed != tc.keyed {
				t.Fatalf("split %+v, want %d partitions, keyed %v", sp, tc.parts, tc.keyed)
			}
			if tc.parts == 0 && !strings.Contains(sp.Reason, tc.reason) {
				t.Errorf("reason %q does not say %q", sp.Reason, tc.reason)
			}
			if tc.parts > 0 && sp.Stream == "" {
				t.Errorf("split names no stream: %+v", sp)
			}
			if r := sp.Repartition; (r != nil) != strings.Contains(tc.name, "repartitioned") && tc.parts > 0 && !strings.HasPrefix(tc.name, "repartition ") {
				t.Errorf("split %+v: repartitioned %v", sp, r != nil)
			}
		})
	}
	t.Run("repartition details", func(t *testing.T) {
		def := &rule.Def{ID: "agg", SQL: "SELECT dev, v, count(*) AS n FROM p WHERE v > 2 GROUP BY dev, v, TUMBLINGWINDOW(ss, 1)",
			Options: rule.Options{IsEventTime: true}}
		sp, err := e.runner.Split(ctx, def)
		if err != nil {
			t.Fatal(err)
		}
		if sp.Repartition != nil || !strings.Contains(sp.Reason, "TIMESTAMP") {
			t.Fatalf("event time without TIMESTAMP: %+v", sp)
		}
		def.Options.IsEventTime = false
		if sp, err = e.runner.Split(ctx, def); err != nil {
			t.Fatal(err)
		}
		r := sp.Repartition
		if r == nil || sp.Partitions != 6 || r.Sources != 6 || r.Topic != "rekuiper-agg-repartition" {
			t.Fatalf("split %+v", sp)
		}
		if r.SQL != "SELECT * FROM p WHERE v > 2" || r.RuleSQL != "SELECT dev, v, count(*) AS n FROM p GROUP BY dev, v, TUMBLINGWINDOW(SS, 1)" {
			t.Errorf("first stage %q, second %q", r.SQL, r.RuleSQL)
		}
		want := map[string]any{"brokers": kc.ListenAddrs()[0], "topic": "rekuiper-agg-repartition",
			"key": `{{index . "dev" | json}},{{index . "v" | json}}`, "sendSingle": true}
		for k, v := range want {
			if r.Sink[k] != v {
				t.Errorf("sink property %s = %v, want %v (sink %v)", k, r.Sink[k], v, r.Sink)
			}
		}
		if _, ok := r.Sink["datasource"]; ok {
			t.Errorf("sink has the source's datasource: %v", r.Sink)
		}
		adm := kadm.NewClient(newKafkaClient(t, kc))
		td, err := adm.ListTopics(ctx, r.Topic)
		if err != nil || !td.Has(r.Topic) || len(td[r.Topic].Partitions) != 6 {
			t.Fatalf("internal topic: %v, %v", td, err)
		}
		// The generation follows what the first stage writes: a new
		// SELECT list keeps it, a new WHERE changes it.
		if len(r.Generation) != 16 {
			t.Errorf("generation %q", r.Generation)
		}
		for _, c := range []struct {
			sql  string
			same bool
		}{
			{"SELECT dev, count(*) AS n FROM p WHERE v > 2 GROUP BY dev, v, TUMBLINGWINDOW(ss, 1)", true},
			{"SELECT dev, v, count(*) AS n FROM p WHERE v > 3 GROUP BY dev, v, TUMBLINGWINDOW(ss, 1)", false},
		} {
			other, err := e.runner.Split(ctx, &rule.Def{ID: "agg", SQL: c.sql})
			if err != nil || other.Repartition == nil {
				t.Fatalf("split %+v, %v", other, err)
			}
			if (other.Repartition.Generation == r.Generation) != c.same {
				t.Errorf("%s: generation %s, first %s: want the same %v", c.sql, other.Repartition.Generation, r.Generation, c.same)
			}
		}
		// The rule's WHERE calls an analytic function: the second stage
		// keeps it.
		def.SQL = "SELECT dev FROM p WHERE lag(v) OVER (PARTITION BY dev) > 1 GROUP BY dev, TUMBLINGWINDOW(ss, 1)"
		if sp, err = e.runner.Split(ctx, def); err != nil || sp.Repartition == nil {
			t.Fatalf("split %+v, %v", sp, err)
		}
		if sp.Repartition.SQL != "SELECT * FROM p" || !strings.Contains(sp.Repartition.RuleSQL, "WHERE lag(v)") {
			t.Errorf("first stage %q, second %q", sp.Repartition.SQL, sp.Repartition.RuleSQL)
		}
		// A topic of one partition is repartitioned only with the option.
		one := &rule.Def{ID: "one", SQL: "SELECT count(*) FROM o GROUP BY v, TUMBLINGWINDOW(ss, 1)"}
		if sp, err := e.runner.Split(ctx, one); err != nil || sp.Repartition != nil || !strings.Contains(sp.Reason, "repartitionPartitions") {
			t.Fatalf("one partition, no option: %+v, %v", sp, err)
		}
		one.Options.RepartitionPartitions = 4
		if sp, err := e.runner.Split(ctx, one); err != nil || sp.Repartition == nil || sp.Partitions != 4 || sp.Repartition.Sources != 1 {
			t.Fatalf("one partition, repartitionPartitions 4: %+v, %v", sp, err)
		}
		// Deleting the rule on a cluster deletes its internal topic.
		e.runner.cfg.ClusterNode = "A"
		if err := e.runner.Forget(ctx, def); err != nil {
			t.Fatal(err)
		}
		// A new client: kadm answers from the client's cached metadata.
		td, err = kadm.NewClient(newKafkaClient(t, kc)).ListTopics(ctx, r.Topic)
		if err != nil || td.Has(r.Topic) {
			t.Fatalf("internal topic after the rule's delete: %v, %v", td, err)
		}
		if err := e.runner.Forget(ctx, def); err != nil {
			t.Fatalf("forget a rule whose internal topic is gone: %v", err)
		}
	})
	t.Run("missing topic", func(t *testing.T) {
		_, err := e.runner.Split(ctx, &rule.Def{ID: "r", SQL: "SELECT count(*) FROM nt GROUP BY dev, TUMBLINGWINDOW(ss, 1)"})
		if err == nil || !strings.Contains(err.Error(), "missing") {
			t.Fatalf("split of a rule over a missing topic: %v, want an error naming it", err)
		}
	})
}

// TestTaskReadsItsPartition: the task of a rule reads only its partition
// of the stream, checkpoints under its own id and, started again, resumes
// after the records of its last checkpoint.
func TestTaskReadsItsPartition(t *testing.T) {
	e := newTestEnv(t)
	kc := newKafkaCluster(t, kfake.SeedTopics(3, "three"))
	ctx := context.Background()
	e.confKey(t, "kafka", "k", map[string]any{"brokers": kc.ListenAddrs()[0], "groupID": "g"})
	e.putStream(t, "k", `CREATE STREAM k (v BIGINT) WITH (TYPE="kafka", DATASOURCE="three", CONF_KEY="k")`)
	prod := newKafkaClient(t, kc, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(from, to int) {
		t.Helper()
		var recs []*kgo.Record
		for v := from; v < to; v++ {
			recs = append(recs, &kgo.Record{Topic: "three", Partition: int32(v % 3), Value: fmt.Appendf(nil, `{"v":%d}`, v)})
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	whole := mustParseDef(t, `{"id":"r","sql":"SELECT v FROM k","actions":[{"counting":{"sendSingle":true}}],
		"options":{"qos":1,"checkpointInterval":"50ms"}}`)
	def := whole.ForTask("k", 1)
	if def.ID != "r#p1" {
		t.Fatalf("task id %q", def.ID)
	}
	produce(0, 30)
	run := e.start(t, def)
	msgs, _ := e.out.wait(t, 10)
	stopAfterCheckpoint(t, run)
	if n, _ := e.runner.cfg.Checkpoints.Committed("r#p1"); n == 0 {
		t.Fatal("no checkpoint committed under the task's id r#p1")
	}
	if n, _ := e.runner.cfg.Checkpoints.Committed("r"); n != 0 {
		t.Fatalf("checkpoint %d committed under the rule's id", n)
	}
	produce(30, 60)
	e.start(t, def)
	msgs, _ = e.out.wait(t, 20)
	var want []string
	for v := 1; v < 60; v += 3 {
		want = append(want, fmt.Sprintf(`{"v":%d}`, v))
	}
	if !slices.Equal(msgs, want) {
		t.Fatalf("task of partition 1 wrote %v, want %v (each record of its partition once)", msgs, want)
	}
}

// newKafkaCluster starts an in-process Kafka of one broker, closed when
// the test ends.
func newKafkaCluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	kc, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	return kc
}

// newKafkaClient is a client of kc with opts, closed when the test ends.
func newKafkaClient(t *testing.T, kc *kfake.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(kc.ListenAddrs()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
