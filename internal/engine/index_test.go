package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

// TestIndexedRuleKeepsMetrics runs a rule the stream's index serves next
// to one with the same condition in a shape it does not index, on one
// shared subscription: same results, and the same operator counts (what
// the index spared the first rule is counted as the rule would have).
func TestIndexedRuleKeepsMetrics(t *testing.T) {
	e := newTestEnv(t)
	start := func(id, where string) *running {
		return startRule(t, e, fmt.Sprintf(`{"id":%q,"sql":"SELECT v FROM s WHERE %s","actions":[{"counting":{}}]}`, id, where))
	}
	indexed := start("indexed", "v = 2")
	plain := start("plain", "v + 0 = 2")
	if indexed.built.Plan.Index == nil || plain.built.Plan.Index != nil {
		t.Fatal("want the first rule indexed, the second not")
	}
	for i := range 20 {
		e.publish(t, int64(i%5))
		if i%3 == 0 {
			time.Sleep(time.Millisecond) // not a wait: spaced publishes vary the deliveries' batch sizes
		}
	}
	msgs, _ := e.out.wait(t, 8)
	if len(msgs) != 8 {
		t.Fatalf("outputs %v", msgs)
	}
	keys := []string{"op_1_preprocess_0_records_in_total", "op_1_preprocess_0_records_out_total",
		"op_2_filter_0_records_in_total", "op_2_filter_0_records_out_total", "op_3_project_0_records_in_total",
		"source_s_0_records_in_total", "op_2_filter_0_exceptions_total"}
	var a, b map[string]any
	// On a timeout the checks below say what differs.
	testwait.Poll(testwait.Limit, func() bool {
		a, b = indexed.Metrics(), plain.Metrics()
		same := a["source_s_0_records_in_total"] == int64(20)
		for _, k := range keys {
			same = same && a[k] == b[k]
		}
		return same
	})
	for _, k := range keys {
		if a[k] != b[k] {
			t.Errorf("%s: indexed %v, unindexed %v", k, a[k], b[k])
		}
	}
	if n, _ := a["source_s_0_records_in_total"].(int64); n != 20 {
		t.Errorf("source records_in %d, want 20", n)
	}
	if in := indexed.inputs[0]; in.sub.Skipped(in.consumer) == 0 {
		t.Error("the index spared the rule nothing")
	}
}

// TestIndexedRuleRestoresAtQos1: an indexed rule at qos 1 resumes after
// its checkpoint: records before it, kept or skipped, are not replayed.
func TestIndexedRuleRestoresAtQos1(t *testing.T) {
	e := newTestEnv(t)
	def := mustParseDef(t, `{"id":"q","sql":"SELECT v FROM s WHERE v IN (2, 4)",
		"actions":[{"counting":{}}],"options":{"qos":1,"checkpointInterval":"50ms"}}`)
	run := e.start(t, def)
	if run.(*running).built.Plan.Index == nil {
		t.Fatal("rule not indexed")
	}
	waitSubscribed(t, e.bus, 1)
	e.publish(t, 1, 2, 3)
	e.out.wait(t, 1)
	stopAfterCheckpoint(t, run)
	e.startSubscribed(t, def, 1)
	e.publish(t, 5, 4, 2)
	e.out.wait(t, 3)
	// A record replayed from before the checkpoint would come out ahead
	// of this marker.
	e.publish(t, 4)
	msgs, seqs := e.out.wait(t, 4)
	if fmt.Sprint(msgs) != `[[{"v":2}] [{"v":4}] [{"v":2}] [{"v":4}]]` || seqs[3] != 4 {
		t.Fatalf("outputs %v (%v), want 2, then 4 and 2 after the restart, then the marker 4", msgs, seqs)
	}
}
