package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
)

// Splitter decides whether a rule is split (the engine's Runner.Split).
// An error is a failure to ask the brokers, retried at the next pass.
type Splitter func(ctx context.Context, def *rule.Def) (rule.Split, error)

// TasksConfig configures Tasks.
type TasksConfig struct {
	// Node is this node's id.
	Node string
	// Runner starts the tasks (the engine's runner).
	Runner rulemgr.Runner
	Split  Splitter
	// Rule returns a rule's definition as stored in the catalog (JSON).
	Rule func(id string) ([]byte, error)
	// Parse decodes a definition Rule returned.
	Parse func(raw []byte) (*rule.Def, error)
	// Recheck is how long a split decision is kept before the brokers are
	// asked again (partitions added to a topic). Default 30 s.
	Recheck time.Duration
	// StartTimeout bounds one start of a task. Default 30 s.
	StartTimeout time.Duration
	// StopTimeout bounds a task's drain when the caller's ctx has no
	// deadline. Default 5 s.
	StopTimeout time.Duration
	// EndSessions, when set, ends the sessions a rule kept on its
	// servers while it ran whole (the engine's Runner.EndSessions).
	EndSessions func(ctx context.Context, def *rule.Def) error
	Clock       clock.Clock
	Logger      *slog.Logger
}

// Tasks runs, in a cluster, the rules that are split into one task per
// input partition, and the spread rules that run as one copy on every
// node: it decides which rules are split or spread (Expand, called by the
// placer on each pass), runs the tasks whose leases this node holds
// (Place and Unplace, through Router) and restarts a failed task with
// backoff while its lease is held. Each task is the rule's definition
// narrowed to one partition (rule.Def.ForTask), or the rule's copy for
// this node (rule.Def.ForNode): it checkpoints, fences and is leased under
// its own id, "<rule>#p<partition>" or "<rule>#n<node>".
//
// Its methods are safe for concurrent use; each running task has one
// goroutine, owned by Tasks and ended by Unplace or Close.
type Tasks struct {
	cfg TasksConfig

	mu     sync.Mutex
	splits map[string]splitEntry // by rule id
	// ended: the definitions, by rule id, whose whole-rule sessions were
	// ended (EndWholeSessions)
	ended  map[string]string
	tasks  map[string]*task // running here, by task id
	closed bool
	wg     sync.WaitGroup
}

type splitEntry struct {
	raw   string // the definition the decision is for
	at    time.Time
	split rule.Split
}

// task is one task running on this node.
type task struct {
	id, rule string
	part     int
	// node is set on the copy of a spread rule (this node's id).
	node string
	// repartition: a task of the rule's repartitioning stage.
	repartition bool
	cancel      context.CancelFunc
	restart     chan struct{}
	done        chan struct{}

	mu        sync.Mutex
	stopCtx   context.Context
	state     rulemgr.State
	message   string
	running   rulemgr.Running
	lastStart int64
	lastStop  int64
}

// NewTasks returns a Tasks; it runs nothing until Place.
func NewTasks(cfg TasksConfig) *Tasks {
	if cfg.Recheck <= 0 {
		cfg.Recheck = 30 * time.Second
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 5 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Wall{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Tasks{cfg: cfg, splits: map[string]splitEntry{}, tasks: map[string]*task{}, ended: map[string]string{}}
}

// Expand replaces, in the ids of the rules wanted running, each rule that
// is split by the ids of its tasks. A rule whose split cannot be decided
// (the brokers do not answer) and was never decided is left out of this
// pass: placing it whole and splitting it later would lose its state.
func (ts *Tasks) Expand(ctx context.Context, ids []string) []string {
	out := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		seen[id] = true
		sp, ok := ts.split(ctx, id)
		switch {
		case !ok:
		case sp.Spread:
			// Each node places its own copy only (Placer.balance).
			out = append(out, rule.CopyID(id, ts.cfg.Node))
		case sp.Partitions == 0:
			out = append(out, id)
		default:
			out = append(out, taskIDs(id, sp)...)
		}
	}
	ts.mu.Lock()
	for id := range ts.splits {
		if !seen[id] {
			delete(ts.splits, id)
		}
	}
	for id := range ts.ended {
		if !seen[id] {
			delete(ts.ended, id)
		}
	}
	ts.mu.Unlock()
	return out
}

// taskIDs lists the tasks of a split rule: those of its repartitioning
// stage, if any, then its own.
func taskIDs(id string, sp rule.Split) []string {
	var out []string
	if r := sp.Repartition; r != nil {
		for p := range r.Sources {
			out = append(out, rule.RepartitionTaskID(id, p))
		}
	}
	for p := range sp.Partitions {
		out = append(out, rule.TaskID(id, p))
	}
	return out
}

// split returns the rule's split, decided anew when its definition changed
// or the last decision is older than Recheck.
//
// Placement passes call it for every rule wanted running, so a rule whose
// stored definition is unchanged is not decoded again until Recheck.
func (ts *Tasks) split(ctx context.Context, id string) (rule.Split, bool) {
	raw, err := ts.cfg.Rule(id)
	if err != nil {
		return rule.Split{}, true
	}
	now := ts.cfg.Clock.Now()
	ts.mu.Lock()
	e, known := ts.splits[id]
	ts.mu.Unlock()
	same := known && e.raw == string(raw)
	if same && now.Sub(e.at) < ts.cfg.Recheck {
		return e.split, true
	}
	def, err := ts.cfg.Parse(raw)
	if err != nil {
		// A definition that does not load runs (and fails) whole.
		return rule.Split{}, true
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	sp, err := ts.cfg.Split(sctx, def)
	cancel()
	if err != nil {
		if same && e.split.Partitions >= 0 {
			return e.split, true
		}
		if !same {
			ts.cfg.Logger.Warn("cannot tell whether the rule runs as one task per partition; not placing it yet", "rule", id, "err", err)
		}
		// Undecided (Partitions -1, zero time): asked again next pass.
		ts.mu.Lock()
		ts.splits[id] = splitEntry{raw: string(raw), split: rule.Split{Partitions: -1, Reason: err.Error()}}
		ts.mu.Unlock()
		return rule.Split{}, false
	}
	if sp.Partitions < 0 {
		sp.Partitions = 0
	}
	// A split never shrinks while the definition is the same: the tasks
	// of partitions that vanished would lose their checkpoints' owner.
	if same && e.split.Partitions > sp.Partitions {
		sp.Partitions = e.split.Partitions
	}
	if same && sp.Repartition != nil && e.split.Repartition != nil && e.split.Repartition.Sources > sp.Repartition.Sources {
		sp.Repartition.Sources = e.split.Repartition.Sources
	}
	if !same || e.split.Partitions != sp.Partitions || sources(e.split) != sources(sp) || e.split.Spread != sp.Spread {
		switch {
		case sp.Repartition != nil:
			ts.cfg.Logger.Info("rule runs as one task per partition, its stream repartitioned by the rule's key", "rule", id, "stream", sp.Stream,
				"topic", sp.Repartition.Topic, "repartitionTasks", sp.Repartition.Sources, "tasks", sp.Partitions)
		case sp.Partitions > 0:
			ts.cfg.Logger.Info("rule runs as one task per partition", "rule", id, "stream", sp.Stream, "tasks", sp.Partitions)
		case sp.Spread:
			ts.cfg.Logger.Info("rule runs as one copy on every node, the broker splitting its shared subscription among them", "rule", id, "stream", sp.Stream)
		case sp.Keyed:
			ts.cfg.Logger.Info("rule runs whole, on one node: it cannot be split by partition", "rule", id, "reason", sp.Reason)
		case sp.SpreadReason != "":
			ts.cfg.Logger.Info("rule runs whole, on one node, not on every node", "rule", id, "reason", sp.SpreadReason)
		}
	}
	ts.mu.Lock()
	ts.splits[id] = splitEntry{raw: string(raw), at: now, split: sp}
	ts.mu.Unlock()
	if known && !same {
		// Updated here or on another node: its tasks here restart with
		// the new definition (those no longer wanted are unplaced).
		ts.Changed(id)
	}
	return sp, true
}

// sources is the number of repartitioning tasks of a split.
func sources(sp rule.Split) int {
	if sp.Repartition == nil {
		return 0
	}
	return sp.Repartition.Sources
}

// Split returns the last split decision about rule id.
func (ts *Tasks) Split(id string) (rule.Split, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	e, ok := ts.splits[id]
	return e.split, ok && e.split.Partitions >= 0
}

// EndWholeSessions ends, once per definition, the sessions spread rule id
// kept on its brokers while it ran whole (a persistent MQTT session in the
// shared subscription's group, which the broker would go on feeding):
// the placer calls it (PlacerConfig.Unshared) once no node holds the
// whole rule's lease. A failure is logged and tried again on the next
// pass.
func (ts *Tasks) EndWholeSessions(ctx context.Context, id string) {
	if ts.cfg.EndSessions == nil {
		return
	}
	raw, err := ts.cfg.Rule(id)
	ts.mu.Lock()
	done := ts.ended[id] == string(raw)
	ts.mu.Unlock()
	if err != nil || done {
		return
	}
	def, err := ts.cfg.Parse(raw)
	if err != nil {
		return
	}
	ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = ts.cfg.EndSessions(ectx, def)
	cancel()
	if err != nil {
		ts.cfg.Logger.Warn("end the broker session the rule kept while it ran whole; trying again", "rule", id, "err", err)
		return
	}
	ts.mu.Lock()
	ts.ended[id] = string(raw)
	ts.mu.Unlock()
}

// Place starts task id here (this node acquired its lease).
func (ts *Tasks) Place(id string) {
	ruleID, p, repart, ok := rule.ParseTask(id)
	ruleCopy, node, isCopy := rule.ParseCopyID(id)
	switch {
	case isCopy && node == ts.cfg.Node:
		ruleID, p, repart = ruleCopy, 0, false
	case isCopy || !ok:
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed || ts.tasks[id] != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	if !isCopy {
		node = ""
	}
	t := &task{id: id, rule: ruleID, part: p, node: node, repartition: repart, cancel: cancel, restart: make(chan struct{}, 1), done: make(chan struct{}), state: rulemgr.StateStarting}
	ts.tasks[id] = t
	ts.wg.Go(func() {
		defer close(t.done)
		ts.supervise(ctx, t)
	})
}

// Unplace stops task id (draining within ctx) and returns once it stopped.
func (ts *Tasks) Unplace(ctx context.Context, id string) error {
	ts.mu.Lock()
	t := ts.tasks[id]
	delete(ts.tasks, id)
	ts.mu.Unlock()
	if t == nil {
		return nil
	}
	t.mu.Lock()
	t.stopCtx = ctx
	t.mu.Unlock()
	t.cancel()
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop task %s: %w", id, ctx.Err())
	}
}

// Changed restarts the tasks of rule id running here with its current
// definition; the placer stops them when the rule is no longer wanted. It
// is also how POST /rules/{id}/restart reaches the tasks: on the node
// that answers directly, on the others through the catalog write of the
// wanted state.
func (ts *Tasks) Changed(id string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range ts.tasks {
		if t.rule == id {
			select {
			case t.restart <- struct{}{}:
			default:
			}
		}
	}
}

// StopRule stops the tasks of rule id running here (draining within ctx),
// before the rule's data is removed after a delete; the placer gives
// their leases up on its next pass.
func (ts *Tasks) StopRule(ctx context.Context, id string) {
	ts.mu.Lock()
	var ids []string
	for tid, t := range ts.tasks {
		if t.rule == id {
			ids = append(ids, tid)
		}
	}
	ts.mu.Unlock()
	for _, tid := range ids {
		if err := ts.Unplace(ctx, tid); err != nil {
			ts.cfg.Logger.Warn("stop task of a deleted rule", "task", tid, "err", err)
		}
	}
}

// Close stops every task (draining within ctx) and waits for them.
func (ts *Tasks) Close(ctx context.Context) {
	ts.mu.Lock()
	ts.closed = true
	ids := slices.Collect(maps.Keys(ts.tasks))
	ts.mu.Unlock()
	for _, id := range ids {
		_ = ts.Unplace(ctx, id)
	}
	ts.wg.Wait()
}

// Summary is task id's state as it publishes it with its lease.
func (ts *Tasks) Summary(id string) (catalog.RuleSummary, bool) {
	ts.mu.Lock()
	t := ts.tasks[id]
	ts.mu.Unlock()
	if t == nil {
		return catalog.RuleSummary{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return catalog.RuleSummary{State: t.state.String(), Message: t.message, LastStart: t.lastStart, LastStop: t.lastStop}, true
}

// local returns the status of task id if it runs here, with its counters
// and the id of its last checkpoint (checkpoint_last_id: a task that
// moved shows by it whether it continued from the previous node's
// checkpoints).
func (ts *Tasks) local(id string) (rulemgr.TaskStatus, bool) {
	ts.mu.Lock()
	t := ts.tasks[id]
	ts.mu.Unlock()
	if t == nil {
		return rulemgr.TaskStatus{}, false
	}
	t.mu.Lock()
	st := rulemgr.TaskStatus{ID: id, Stage: stage(t.repartition), Node: ts.cfg.Node, State: t.state.String(), Message: t.message, LastStart: t.lastStart}
	if t.node == "" {
		st.Partition = &t.part
	}
	r := t.running
	t.mu.Unlock()
	if r != nil {
		for k, v := range r.Metrics() {
			if strings.HasSuffix(k, "_total") || k == "checkpoint_last_id" {
				if st.Metrics == nil {
					st.Metrics = map[string]any{}
				}
				st.Metrics[k] = v
			}
		}
	}
	return st, true
}

// supervise runs task t until ctx ends: it starts it, restarts it when
// its rule changed, and after a failure restarts it with backoff (1 s
// doubling to 30 s, reset after a minute of running).
func (ts *Tasks) supervise(ctx context.Context, t *task) {
	log := ts.cfg.Logger.With("rule", t.rule, "task", t.id)
	delay := time.Second
	for {
		r, err := ts.start(ctx, t)
		if err != nil {
			if ctx.Err() != nil {
				ts.stopped(t, rulemgr.StateStopped, "")
				return
			}
			log.Warn("task did not start; retrying", "err", err, "in", delay)
			ts.stopped(t, rulemgr.StateStoppedByError, err.Error())
			if !clock.Sleep(ctx, ts.cfg.Clock, delay) {
				ts.stopped(t, rulemgr.StateStopped, "")
				return
			}
			delay = min(2*delay, 30*time.Second)
			continue
		}
		started := ts.cfg.Clock.Now()
		select {
		case <-ctx.Done():
			ts.stop(t, r)
			ts.stopped(t, rulemgr.StateStopped, "")
			return
		case <-t.restart:
			log.Info("rule changed or restarted: restarting its task")
			ts.stop(t, r)
			delay = time.Second
			continue
		case <-r.Done():
		}
		msg := "task ended"
		if err := r.Err(); err != nil {
			msg = err.Error()
		}
		if ts.cfg.Clock.Now().Sub(started) > time.Minute {
			delay = time.Second
		}
		log.Warn("task stopped by itself; restarting", "err", msg, "in", delay)
		ts.stopped(t, rulemgr.StateStoppedByError, msg)
		if !clock.Sleep(ctx, ts.cfg.Clock, delay) {
			ts.stopped(t, rulemgr.StateStopped, "")
			return
		}
		delay = min(2*delay, 30*time.Second)
	}
}

// start starts the task's definition: the rule's, narrowed to the task's
// partition of the stream the split names.
func (ts *Tasks) start(ctx context.Context, t *task) (rulemgr.Running, error) {
	raw, err := ts.cfg.Rule(t.rule)
	if err != nil {
		return nil, err
	}
	def, err := ts.cfg.Parse(raw)
	if err != nil {
		return nil, err
	}
	sp, ok := ts.Split(t.rule)
	if t.node != "" {
		if !ok || !sp.Spread {
			return nil, errors.New("the rule does not run on every node (any more)")
		}
		return ts.run(ctx, t, def.ForNode(t.node))
	}
	if !ok || sp.Partitions == 0 {
		return nil, errors.New("the rule is not split into tasks (any more)")
	}
	if t.repartition && sp.Repartition == nil {
		return nil, errors.New("the rule's stream is not repartitioned (any more)")
	}
	td := def.ForSplit(sp, t.part)
	if t.repartition {
		td = def.ForRepartition(sp, t.part)
	}
	return ts.run(ctx, t, td)
}

// run starts td, the task's definition.
func (ts *Tasks) run(ctx context.Context, t *task, td *rule.Def) (rulemgr.Running, error) {
	t.mu.Lock()
	t.state = rulemgr.StateStarting
	t.mu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, ts.cfg.StartTimeout)
	defer cancel()
	r, err := ts.cfg.Runner.Start(sctx, td)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.state, t.message, t.running, t.lastStart = rulemgr.StateRunning, "", r, ts.cfg.Clock.Now().UnixMilli()
	t.mu.Unlock()
	return r, nil
}

// stop drains r within the ctx Unplace gave, or StopTimeout.
func (ts *Tasks) stop(t *task, r rulemgr.Running) {
	t.mu.Lock()
	sctx := t.stopCtx
	t.mu.Unlock()
	cancel := func() {}
	if sctx == nil {
		sctx, cancel = context.WithTimeout(context.Background(), ts.cfg.StopTimeout)
	}
	defer cancel()
	if err := r.Stop(sctx); err != nil {
		ts.cfg.Logger.Warn("stop task", "task", t.id, "err", err)
	}
}

func (ts *Tasks) stopped(t *task, st rulemgr.State, msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.state, t.message, t.running, t.lastStop = st, msg, nil, ts.cfg.Clock.Now().UnixMilli()
}
