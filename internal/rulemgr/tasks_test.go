package rulemgr

import (
	"testing"

	"github.com/rekuiper/rekuiper/internal/catalog"
)

func TestWithTasks(t *testing.T) {
	tasks := []TaskStatus{
		{ID: "r#p0", Partition: ptr(0), Node: "a", State: "running", LastStart: 5, Metrics: map[string]any{"source_s_0_records_in_total": int64(3), "op_x_0_process_latency_us": int64(9)}},
		{ID: "r#p1", Partition: ptr(1), Node: "b", State: "running", LastStart: 7},
		{ID: "r#p2", Partition: ptr(2), Node: "a", State: "running", Metrics: map[string]any{"source_s_0_records_in_total": int64(4)}},
	}
	s := withTasks(Status{ID: "r", Wanted: catalog.RuleRunning}, tasks)
	if s.State != StateRunning || s.Node != "a,b" || s.LastStart != 7 {
		t.Errorf("all running: state %v, node %q, lastStart %d", s.State, s.Node, s.LastStart)
	}
	if s.Metrics["source_s_0_records_in_total"] != int64(7) || s.Metrics["op_x_0_process_latency_us"] != nil {
		t.Errorf("metrics %v: want the counters summed, nothing else", s.Metrics)
	}
	tasks[1].State, tasks[1].Message = "stopped by error", "broker gone"
	tasks[2].State, tasks[2].Node = "stopped", ""
	s = withTasks(Status{ID: "r", Wanted: catalog.RuleRunning}, tasks)
	if s.State != StateStoppedByError || s.Message != "r#p1: broker gone" {
		t.Errorf("a task failed: state %v, message %q", s.State, s.Message)
	}
	tasks[1].State = "running"
	if s = withTasks(Status{ID: "r", Wanted: catalog.RuleRunning}, tasks); s.State != StateStarting {
		t.Errorf("a task not placed: state %v, want starting", s.State)
	}
	if s = withTasks(Status{ID: "r", State: StateStopped, Wanted: catalog.RuleStopped}, tasks); s.State != StateStopped || len(s.Tasks) != 3 {
		t.Errorf("rule wanted stopped: state %v, %d tasks", s.State, len(s.Tasks))
	}
}

func ptr(n int) *int { return &n }
