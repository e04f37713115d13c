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
	// Topic, when set, replaces the stream's topic: the second stage of
	// a repartitioned rule reads the internal topic instead.
	Topic string
	// Generation, set on both stages of a repartitioned rule, names what
	// the first stage writes (Repartition.Generation): it is part of each
	// stage's checkpoint fingerprint, and the second stage reads only the
	// internal records of its generation.
	Generation string
	// Node, set on the copy of a spread rule (Split.Spread) that runs on
	// that node, names the node; Stream and Partition are then unset: the
	// copy reads its streams whole, through the broker's shared
	// subscription, and keeps no session with the broker.
	Node string
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
	// Repartition is set when the rule's key is not the stream's record
	// key: a first stage re-keys the stream into an internal topic, and
	// the Partitions tasks read that topic's partitions.
	Repartition *Repartition
	// Spread: the rule is stateless and reads only MQTT shared
	// subscriptions, so it runs as one copy on every node (Def.ForNode),
	// the broker splitting the input among them. Partitions is then 0.
	Spread bool
	// SpreadReason says why a stateless rule over MQTT is not spread
	// (it then runs whole, on one node); empty for other rules.
	SpreadReason string
}

// Repartition describes the first stage of a repartitioned rule: one
// task per partition of the stream's topic (Sources of them), each the
// statement SQL over its partition writing every row to Topic through a
// kafka sink with the properties Sink, keyed by the rule's GROUP BY
// values. The rule's own tasks then run RuleSQL (the rule's statement,
// without the WHERE the first stage applied) over Topic.
//
// Generation changes exactly when what the first stage writes changes
// (its statement, the stream's definition): a new generation starts both
// stages afresh, and the second stage skips the records earlier
// generations left in the internal topic (GenerationHeader).
type Repartition struct {
	Topic      string
	Sources    int
	SQL        string
	Sink       map[string]any
	RuleSQL    string
	Generation string
}

// GenerationHeader is the header of the internal records that holds the
// generation of the first stage that wrote them.
const GenerationHeader = "rekuiper-generation"

// RepartitionTopic is the internal topic of rule's repartitioning stage.
func RepartitionTopic(rule string) string { return "rekuiper-" + rule + "-repartition" }

// TaskPrefix starts the id of every task of a rule: "<rule>#". Rule ids
// cannot contain '#' (guard.Name refuses it), so task ids never collide
// with rule ids, and the prefix finds exactly one rule's tasks.
func TaskPrefix(rule string) string { return rule + "#" }

// taskSep separates a rule id from the partition in the id of a task of
// the rule; repartSep in the id of a task of its repartitioning stage.
const (
	taskSep   = "#p"
	repartSep = "#r"
	copySep   = "#n"
)

// TaskID is the id of the task of rule that reads partition p.
func TaskID(rule string, p int) string { return rule + taskSep + strconv.Itoa(p) }

// RepartitionTaskID is the id of the repartitioning task of rule that
// reads partition p of the rule's stream.
func RepartitionTaskID(rule string, p int) string { return rule + repartSep + strconv.Itoa(p) }

// CopyID is the id of the copy of a spread rule that runs on node.
func CopyID(rule, node string) string { return rule + copySep + node }

// ParseCopyID splits the id of a spread rule's copy into its rule and
// node; ok is false for any other id. The rule id ends at the first '#',
// which rule ids cannot contain, so a node id may contain anything.
func ParseCopyID(id string) (rule, node string, ok bool) {
	i := strings.IndexByte(id, '#')
	if i <= 0 || !strings.HasPrefix(id[i:], copySep) || len(id) == i+len(copySep) {
		return "", "", false
	}
	return id[:i], id[i+len(copySep):], true
}

// IsTaskID reports whether id names a task of a rule (either stage of a
// split rule, or a spread rule's copy) rather than a rule.
func IsTaskID(id string) bool {
	if _, _, ok := ParseCopyID(id); ok {
		return true
	}
	_, _, ok := ParseTaskID(id)
	return ok
}

// ParseTaskID splits the id of a task (of either stage) into its rule and
// partition; ok is false for an id that is not a task's.
func ParseTaskID(id string) (rule string, p int, ok bool) {
	rule, p, _, ok = ParseTask(id)
	return rule, p, ok
}

// ParseTask is ParseTaskID that also tells whether id is a task of the
// repartitioning stage.
func ParseTask(id string) (rule string, p int, repartition bool, ok bool) {
	i := strings.LastIndexByte(id, '#')
	if i <= 0 || i+2 > len(id) {
		return "", 0, false, false
	}
	switch id[i : i+2] {
	case taskSep:
	case repartSep:
		repartition = true
	default:
		return "", 0, false, false
	}
	num := id[i+2:]
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || strconv.Itoa(n) != num {
		return "", 0, false, false
	}
	return id[:i], n, repartition, true
}

// ForTask returns a copy of d that runs as the task of d's rule reading
// partition p of stream: its id is the task's, and a transactionalID given
// to a sink gets the task's suffix, so that the tasks' producers do not
// fence each other.
func (d *Def) ForTask(stream string, p int) *Def {
	return d.forTask(TaskID(d.ID, p), &Task{Rule: d.ID, Stream: stream, Partition: p}, fmt.Sprintf("-p%d", p))
}

// ForNode returns the copy of d's spread rule that runs on node: its id
// is the copy's, and a transactionalID given to a sink gets the node's
// suffix, so that the copies' producers do not fence each other.
func (d *Def) ForNode(node string) *Def {
	return d.forTask(CopyID(d.ID, node), &Task{Rule: d.ID, Node: node}, "-n"+node)
}

// ForSplit returns the definition of the task of d's rule that reads
// partition p as sp decides: ForTask, reading the internal topic instead
// of the stream's when sp repartitions the stream.
func (d *Def) ForSplit(sp Split, p int) *Def {
	if sp.Repartition == nil {
		return d.ForTask(sp.Stream, p)
	}
	t := d.forTask(TaskID(d.ID, p), &Task{Rule: d.ID, Stream: sp.Stream, Partition: p, Topic: sp.Repartition.Topic, Generation: sp.Repartition.Generation}, fmt.Sprintf("-p%d", p))
	t.SQL = sp.Repartition.RuleSQL
	return t
}

// ForRepartition returns the definition of the repartitioning task of
// d's rule that reads partition p of its stream: the first stage's
// statement, its kafka sink writing the internal topic, and the rule's
// options at processing time (the stage keeps no windows; the event time
// travels in the rows).
func (d *Def) ForRepartition(sp Split, p int) *Def {
	r := sp.Repartition
	props := make(map[string]any, len(r.Sink))
	for k, v := range r.Sink {
		props[k] = v
	}
	props["headers"] = map[string]any{GenerationHeader: r.Generation}
	t := &Def{ID: RepartitionTaskID(d.ID, p), Name: d.Name, SQL: r.SQL, Options: d.Options, Triggered: true, Version: d.Version,
		Actions: []Action{{Type: "kafka", Props: props}},
		Task:    &Task{Rule: d.ID, Stream: sp.Stream, Partition: p, Generation: r.Generation}}
	// Rows only: an error row would reach the rule as a record. The
	// options that shape its rows are the generation's (Repartition).
	t.Options.IsEventTime, t.Options.SendError, t.Options.SendMetaToSink = false, false, false
	t.Options.LateTolerance = 0
	t.Options.Cron, t.Options.Duration, t.Options.CronDatetimeRange = "", "", nil
	return t
}

// forTask returns a copy of d under id, with suffix appended to every
// transactionalID of its sinks.
func (d *Def) forTask(id string, task *Task, suffix string) *Def {
	t := *d
	t.ID = id
	t.Task = task
	t.Actions = make([]Action, len(d.Actions))
	for i, a := range d.Actions {
		props := make(map[string]any, len(a.Props))
		for k, v := range a.Props {
			props[k] = v
		}
		if id, ok := props["transactionalID"].(string); ok && id != "" {
			props["transactionalID"] = id + suffix
		}
		t.Actions[i] = Action{Type: a.Type, Props: props}
	}
	return &t
}
