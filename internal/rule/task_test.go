package rule

import (
	"strings"
	"testing"
)

func TestTaskID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		rule string
		p    int
		ok   bool
	}{
		{"r#p0", "r", 0, true},
		{"my-rule#p15", "my-rule", 15, true},
		{"a#pb#p3", "a#pb", 3, true},
		{"r", "", 0, false},
		{"#p1", "", 0, false},
		{"r#p", "", 0, false},
		{"r#p01", "", 0, false},
		{"r#p-1", "", 0, false},
		{"r#px", "", 0, false},
		{"r#r2", "r", 2, true},
		{"r#r", "", 0, false},
		{"r#q2", "", 0, false},
	} {
		rule, p, ok := ParseTaskID(tc.id)
		if rule != tc.rule || p != tc.p || ok != tc.ok {
			t.Errorf("ParseTaskID(%q) = %q, %d, %v; want %q, %d, %v", tc.id, rule, p, ok, tc.rule, tc.p, tc.ok)
		}
		_, _, repart, _ := ParseTask(tc.id)
		if repart != (tc.ok && strings.Contains(tc.id, "#r")) {
			t.Errorf("ParseTask(%q) says repartition %v", tc.id, repart)
		}
		if tc.ok && !repart && TaskID(rule, p) != tc.id {
			t.Errorf("TaskID(%q, %d) = %q, want %q", rule, p, TaskID(rule, p), tc.id)
		}
		if tc.ok && repart && RepartitionTaskID(rule, p) != tc.id {
			t.Errorf("RepartitionTaskID(%q, %d) = %q, want %q", rule, p, RepartitionTaskID(rule, p), tc.id)
		}
		if tc.ok && !strings.HasPrefix(tc.id, TaskPrefix(rule)) {
			t.Errorf("task id %q does not start with TaskPrefix %q", tc.id, TaskPrefix(rule))
		}
	}
}

func TestForSplitRepartitioned(t *testing.T) {
	d := &Def{ID: "r", SQL: "SELECT dev, count(*) FROM s WHERE v > 0 GROUP BY dev, TUMBLINGWINDOW(ss, 1)",
		Options: Options{Qos: 2, IsEventTime: true, SendError: true},
		Actions: []Action{{Type: "log", Props: map[string]any{}}}}
	sp := Split{Stream: "s", Partitions: 4, Repartition: &Repartition{Topic: RepartitionTopic("r"), Sources: 3,
		SQL: "SELECT * FROM s WHERE v > 0", Sink: map[string]any{"brokers": "b:9092", "topic": "rekuiper-r-repartition"},
		RuleSQL: "SELECT dev, count(*) FROM s GROUP BY dev, TUMBLINGWINDOW(ss, 1)", Generation: "g1"}}
	second := d.ForSplit(sp, 3)
	if second.ID != "r#p3" || *second.Task != (Task{Rule: "r", Stream: "s", Partition: 3, Topic: "rekuiper-r-repartition", Generation: "g1"}) || second.SQL != sp.Repartition.RuleSQL {
		t.Errorf("second stage: id %q, task %+v, sql %q", second.ID, second.Task, second.SQL)
	}
	first := d.ForRepartition(sp, 2)
	if first.ID != "r#r2" || *first.Task != (Task{Rule: "r", Stream: "s", Partition: 2, Generation: "g1"}) || first.SQL != sp.Repartition.SQL {
		t.Errorf("first stage: id %q, task %+v, sql %q", first.ID, first.Task, first.SQL)
	}
	if len(first.Actions) != 1 || first.Actions[0].Type != "kafka" || first.Actions[0].Props["topic"] != "rekuiper-r-repartition" {
		t.Errorf("first stage actions: %+v", first.Actions)
	}
	if h, _ := first.Actions[0].Props["headers"].(map[string]any); h[GenerationHeader] != "g1" {
		t.Errorf("first stage sink headers: %v, want the generation", first.Actions[0].Props["headers"])
	}
	if first.Options.Qos != 2 || first.Options.IsEventTime || first.Options.SendError {
		t.Errorf("first stage options: %+v (want the rule's qos, processing time, no error rows)", first.Options)
	}
	first.Actions[0].Props["key"] = "k"
	if _, ok := sp.Repartition.Sink["key"]; ok {
		t.Error("ForRepartition shares its sink properties with the split")
	}
	if d.ForSplit(Split{Stream: "s", Partitions: 4}, 1).Task.Topic != "" {
		t.Error("a task of a rule that is not repartitioned reads another topic")
	}
}

func TestForTask(t *testing.T) {
	d := &Def{ID: "r", SQL: "SELECT 1", Actions: []Action{
		{Type: "kafka", Props: map[string]any{"topic": "o", "transactionalID": "tx"}},
		{Type: "log", Props: map[string]any{}},
	}}
	td := d.ForTask("s", 4)
	if td.ID != "r#p4" || td.Task == nil || *td.Task != (Task{Rule: "r", Stream: "s", Partition: 4}) {
		t.Fatalf("task def: id %q, task %+v", td.ID, td.Task)
	}
	if got := td.Actions[0].Props["transactionalID"]; got != "tx-p4" {
		t.Errorf("task's transactionalID %v, want tx-p4", got)
	}
	if d.ID != "r" || d.Task != nil || d.Actions[0].Props["transactionalID"] != "tx" {
		t.Errorf("ForTask changed the rule's definition: %+v", d)
	}
	if td.SQL != d.SQL || len(td.Actions) != 2 {
		t.Errorf("task def lost the rule's SQL or actions: %+v", td)
	}
}

func TestCopyID(t *testing.T) {
	for _, tc := range []struct {
		id, rule, node string
		ok             bool
	}{
		{"r#n0a1b", "r", "0a1b", true},
		{"my-rule#nnode#p3", "my-rule", "node#p3", true},
		{"r#n", "", "", false},
		{"#nx", "", "", false},
		{"r#p3", "", "", false},
		{"r", "", "", false},
	} {
		rule, node, ok := ParseCopyID(tc.id)
		if rule != tc.rule || node != tc.node || ok != tc.ok {
			t.Errorf("ParseCopyID(%q) = %q, %q, %v; want %q, %q, %v", tc.id, rule, node, ok, tc.rule, tc.node, tc.ok)
		}
		if tc.ok && CopyID(rule, node) != tc.id {
			t.Errorf("CopyID(%q, %q) = %q, want %q", rule, node, CopyID(rule, node), tc.id)
		}
		if tc.ok && !IsTaskID(tc.id) {
			t.Errorf("IsTaskID(%q) = false", tc.id)
		}
	}
	if IsTaskID("r") || !IsTaskID("r#p1") || !IsTaskID("r#r0") {
		t.Error("IsTaskID misjudges a rule or a partition task")
	}
}

func TestForNode(t *testing.T) {
	d := &Def{ID: "r", SQL: "SELECT * FROM s", Options: Options{Qos: 1},
		Actions: []Action{{Type: "kafka", Props: map[string]any{"transactionalID": "tx"}}, {Type: "log", Props: map[string]any{}}}}
	c := d.ForNode("n1")
	if c.ID != "r#nn1" || *c.Task != (Task{Rule: "r", Node: "n1"}) || c.SQL != d.SQL {
		t.Errorf("copy: id %q, task %+v, sql %q", c.ID, c.Task, c.SQL)
	}
	if got := c.Actions[0].Props["transactionalID"]; got != "tx-nn1" {
		t.Errorf("copy's transactionalID %v, want tx-nn1", got)
	}
	if d.Actions[0].Props["transactionalID"] != "tx" || d.ID != "r" {
		t.Error("ForNode changed the rule's own definition")
	}
}
