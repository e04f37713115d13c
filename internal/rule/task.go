package rule

import (
	"fmt"
	"strconv"
	"strings"
)

// Task makes a definition one task of a partitioned rule: the rule's plan
// reading only one partition of its stream, checkpointed and placed under
// the task's own id (internal/cluster runs such tasks). A Def without a
// Task is the whole rule.
type Task struct {
	// Rule is the id of the rule the task belongs to.
	Rule string
	// Stream is the stream whose source reads only Partition.
	Stream    string
	Partition int
}

// Split is whether a rule runs as one task per partition of its stream
// (decided by the engine, acted on by a cluster).
type Split struct {
	// Stream is the stream whose partitions the tasks read.
	Stream string
	// Partitions is the number of tasks; 0 when the rule runs whole.
	Partitions int
	// Keyed: the rule groups a partitioned stream by some key, so that
	// running it whole deserves an explanation (Reason).
	Keyed bool
	// Reason says why the rule runs whole.
	Reason string
}

// taskSep separates a rule id from the partition in a task id. Rule ids
// cannot contain it (guard.Name refuses '#'), so task ids never collide
// with rule ids.
const taskSep = "#p"

// TaskID is the id of the task of rule that reads partition p.
func TaskID(rule string, p int) string { return rule + taskSep + strconv.Itoa(p) }

// ParseTaskID splits a task id into its rule and partition; ok is false
// for an id that is not a task's.
func ParseTaskID(id string) (rule string, p int, ok bool) {
	i := strings.LastIndex(id, taskSep)
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(id[i+len(taskSep):])
	if err != nil || n < 0 || strconv.Itoa(n) != id[i+len(taskSep):] {
		return "", 0, false
	}
	return id[:i], n, true
}

// ForTask returns a copy of d that runs as the task of d's rule reading
// partition p of stream: its id is the task's, and a transactionalID given
// to a sink gets the task's suffix, so that the tasks' producers do not
// fence each other.
func (d *Def) ForTask(stream string, p int) *Def {
	t := *d
	t.ID = TaskID(d.ID, p)
	t.Task = &Task{Rule: d.ID, Stream: stream, Partition: p}
	t.Actions = make([]Action, len(d.Actions))
	for i, a := range d.Actions {
		props := make(map[string]any, len(a.Props))
		for k, v := range a.Props {
			props[k] = v
		}
		if id, ok := props["transactionalID"].(string); ok && id != "" {
			props["transactionalID"] = fmt.Sprintf("%s-p%d", id, p)
		}
		t.Actions[i] = Action{Type: a.Type, Props: props}
	}
	return &t
}
