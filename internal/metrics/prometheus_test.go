package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rekuiper/rekuiper/internal/rulemgr"
)

type fakeRules struct{ st []rulemgr.Status }

func (f fakeRules) List() []rulemgr.Status { return f.st }
func (f fakeRules) Status(id string) (rulemgr.Status, error) {
	for _, s := range f.st {
		if s.ID == id {
			return s, nil
		}
	}
	return rulemgr.Status{}, nil
}

func TestSplitKey(t *testing.T) {
	for _, tc := range []struct{ key, kind, op, inst, metric string }{
		{"source_demo_0_records_in_total", "source", "demo", "0", "records_in_total"},
		{"op_2_window_0_process_latency_us", "op", "2_window", "0", "process_latency_us"},
		{"sink_mqtt_0_0_cache_records_cached_total", "sink", "mqtt_0", "0", "cache_records_cached_total"},
	} {
		kind, op, inst, metric, ok := splitKey(tc.key)
		if !ok || kind != tc.kind || op != tc.op || inst != tc.inst || metric != tc.metric {
			t.Errorf("splitKey(%q) = %q %q %q %q %v", tc.key, kind, op, inst, metric, ok)
		}
	}
}

func TestCollectorExposesRuleMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(fakeRules{st: []rulemgr.Status{{
		ID: "r1", State: rulemgr.StateRunning,
		Metrics: map[string]any{
			"source_demo_0_records_in_total":           int64(12),
			"sink_log_0_0_exceptions_total":            int64(1),
			"op_1_filter_0_last_exception":             "boom",
			"checkpoint_completed_total":               int64(3),
			"sink_log_0_0_cache_records_dropped_total": int64(0),
		},
	}}}))
	want := `
# HELP kuiper_source_records_in_total rekuiper source metric records_in_total.
# TYPE kuiper_source_records_in_total counter
kuiper_source_records_in_total{op="demo",op_instance="0",rule="r1",type="source"} 12
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kuiper_source_records_in_total"); err != nil {
		t.Fatal(err)
	}
	n, err := testutil.GatherAndCount(reg)
	if err != nil {
		t.Fatal(err)
	}
	// status, two rule counts, 4 numeric metrics, 1 last exception
	if n != 8 {
		t.Fatalf("gathered %d metrics, want 8", n)
	}
	wantExc := `
# HELP kuiper_op_last_exception_info rekuiper op last error, in the exception label.
# TYPE kuiper_op_last_exception_info gauge
kuiper_op_last_exception_info{exception="boom",op="1_filter",op_instance="0",rule="r1",type="op"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(wantExc), "kuiper_op_last_exception_info"); err != nil {
		t.Fatal(err)
	}
}

func TestCollectorMasksExceptionSecrets(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(fakeRules{st: []rulemgr.Status{{
		ID: "r1", State: rulemgr.StateRunning,
		Metrics: map[string]any{
			"sink_rest_0_0_last_exception": `Post "http://u:promPW@h/x?token=promTOK": Authorization: Bearer promHDR refused`,
		},
	}}}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetValue())
			}
		}
	}
	all := strings.Join(labels, "\n")
	for _, s := range []string{"promPW", "promTOK", "promHDR"} {
		if strings.Contains(all, s) {
			t.Errorf("a label leaks %s: %s", s, all)
		}
	}
	if !strings.Contains(all, `Post "http://u:******@h/x?token=******"`) {
		t.Errorf("the exception label is missing: %s", all)
	}
}

// TestCollectorSplitRules: a node reports a rule split into tasks with the
// summed counters of the tasks it runs, and not at all when it runs none.
func TestCollectorSplitRules(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(fakeRules{st: []rulemgr.Status{
		{ID: "mine", State: rulemgr.StateRunning, Node: "a,b", Tasks: []rulemgr.TaskStatus{{ID: "mine#p0", Node: "a"}},
			Metrics: map[string]any{"source_s_0_records_in_total": int64(7)}},
		{ID: "theirs", State: rulemgr.StateRunning, Node: "b", Tasks: []rulemgr.TaskStatus{{ID: "theirs#p0", Node: "b"}}},
		{ID: "remote", State: rulemgr.StateRunning, Node: "b"},
	}}))
	want := `
# HELP kuiper_source_records_in_total rekuiper source metric records_in_total.
# TYPE kuiper_source_records_in_total counter
kuiper_source_records_in_total{op="s",op_instance="0",rule="mine",type="source"} 7
# HELP kuiper_rule_status Rule status: 1 running, 0 stopped, -1 stopped by error.
# TYPE kuiper_rule_status gauge
kuiper_rule_status{rule="mine"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kuiper_source_records_in_total", "kuiper_rule_status"); err != nil {
		t.Fatal(err)
	}
}
