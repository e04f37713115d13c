package rule

import "testing"

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
	} {
		rule, p, ok := ParseTaskID(tc.id)
		if rule != tc.rule || p != tc.p || ok != tc.ok {
			t.Errorf("ParseTaskID(%q) = %q, %d, %v; want %q, %d, %v", tc.id, rule, p, ok, tc.rule, tc.p, tc.ok)
		}
		if tc.ok && TaskID(rule, p) != tc.id {
			t.Errorf("TaskID(%q, %d) = %q, want %q", rule, p, TaskID(rule, p), tc.id)
		}
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
