package rulemgr

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/rule"
)

// Placement decides which rules this node runs when several daemons share
// one catalog (internal/cluster's Placer implements it). A rule wanted
// running runs here only while Holds reports true; the placer calls Place
// when it acquired a rule's lease and Unplace before it gives one up.
type Placement interface {
	// Holds reports whether this node holds rule id's lease.
	Holds(id string) bool
	// Remote returns the node that holds rule id's lease and the status
	// it published; ok is false when this node or no node holds it.
	Remote(id string) (node string, sum catalog.RuleSummary, ok bool)
	// Kick asks for a placement pass soon: wanted states changed.
	Kick()
}

// TaskLister is implemented by a Placement that runs some rules as one
// task per input partition, spread over the nodes. Tasks returns the
// tasks of rule id, with ok false when the rule is not split.
type TaskLister interface {
	Tasks(id string) (tasks []TaskStatus, ok bool)
}

// TaskRestarter is implemented by a Placement whose split or spread rules
// run as tasks: RestartTasks restarts the tasks of rule id (POST
// /rules/{id}/restart).
type TaskRestarter interface {
	RestartTasks(id string)
}

// Place tells the manager that this node now holds rule id's lease: the
// rule starts when it is wanted running and not already running.
func (m *Manager) Place(id string) {
	if a, err := m.lookup(id); err == nil {
		a.post(command{kind: cmdPlace})
	}
}

// Unplace stops rule id (draining within ctx) because this node is about
// to give up or has lost its lease; the wanted state is unchanged. It
// returns once the rule stopped.
func (m *Manager) Unplace(ctx context.Context, id string) error {
	a, err := m.lookup(id)
	if err != nil {
		return err
	}
	return a.call(ctx, command{kind: cmdUnplace})
}

// Summary returns rule id's local status for the other nodes.
func (m *Manager) Summary(id string) (catalog.RuleSummary, bool) {
	a, err := m.lookup(id)
	if err != nil {
		return catalog.RuleSummary{}, false
	}
	s := a.status(false)
	return catalog.RuleSummary{State: s.State.String(), Message: s.Message, LastStart: s.LastStart, LastStop: s.LastStop}, true
}

// Adopt applies a rule written by another node, already in the catalog
// (and in r): a new rule gets its goroutine; a changed definition replaces
// the old one (restarting the rule if it runs here); a changed wanted
// state starts or stops it here when this node holds its lease. Nothing is
// written to the catalog. It does not wait.
func (m *Manager) Adopt(r catalog.Rule) {
	def, err := rule.ParseDef(r.Definition, m.cfg.Defaults)
	if err != nil {
		def = &rule.Def{ID: r.ID, Raw: r.Definition, Tags: r.Tags, Version: r.Version}
		err = fmt.Errorf("load rule %s: %w", r.ID, err)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	a, ok := m.actors[r.ID]
	if !ok {
		a = m.spawnLocked(def, r.State, err)
		m.mu.Unlock()
		if r.State == catalog.RuleRunning {
			a.post(command{kind: cmdBegin})
		}
		return
	}
	m.mu.Unlock()
	a.post(command{kind: cmdAdopt, def: def, loadErr: err, wanted: r.State})
}

// AdoptDelete applies a delete another node made: the rule stops here and
// its local data is cleaned up. Nothing is written to the catalog, and
// what the rule held outside the daemon is released by the deleting node.
func (m *Manager) AdoptDelete(id string) {
	if a, err := m.lookup(id); err == nil {
		a.post(command{kind: cmdAdoptDelete})
	}
}

// placed reports whether this node may run the rule: always without a
// Placement, else while it holds the rule's lease.
func (a *actor) placed() bool { return a.m.placed(a.id) }

// placed reports whether rule id may run on this node.
func (m *Manager) placed(id string) bool {
	p := m.cfg.Placement
	return p == nil || p.Holds(id)
}

// notPlaced leaves a rule wanted running stopped on a node that does not
// hold its lease, and asks for a placement pass.
func (a *actor) notPlaced() {
	a.set(func() { a.state, a.message, a.nextStart = StateStopped, "", 0 })
	a.m.cfg.Placement.Kick()
}

// adopt is cmdAdopt on the rule's goroutine.
func (a *actor) adopt(def *rule.Def, loadErr error, wanted catalog.RuleState) {
	changed := loadErr != nil || a.loadErr != nil || !sameDef(a.def.Raw, def.Raw)
	was := a.wanted
	a.set(func() { a.def, a.wanted = def, wanted })
	switch {
	case changed:
		a.halt(context.Background(), StateStopped)
		a.loadErr = loadErr
		a.m.log.Info("rule updated on another node", "rule", a.id)
		if wanted == catalog.RuleRunning {
			a.resetRestarts()
			a.begin()
		}
	case wanted == catalog.RuleStopped && was == catalog.RuleRunning:
		a.halt(context.Background(), StateStopped)
	case wanted == catalog.RuleRunning && was == catalog.RuleStopped:
		a.resetRestarts()
		a.begin()
	}
}

// sameDef reports whether two definitions differ at most in their tags,
// which a running rule does not read.
func sameDef(x, y json.RawMessage) bool {
	if bytes.Equal(x, y) {
		return true
	}
	var mx, my map[string]any
	if json.Unmarshal(x, &mx) != nil || json.Unmarshal(y, &my) != nil {
		return false
	}
	delete(mx, "tags")
	delete(my, "tags")
	return reflect.DeepEqual(mx, my)
}

// overlay answers, for a rule another node runs, with that node's id and
// the status it published.
func (m *Manager) overlay(s Status) Status {
	p := m.cfg.Placement
	if p == nil || p.Holds(s.ID) {
		return s
	}
	if tl, ok := p.(TaskLister); ok {
		if tasks, ok := tl.Tasks(s.ID); ok {
			return withTasks(s, tasks)
		}
	}
	node, sum, ok := p.Remote(s.ID)
	if !ok {
		return s
	}
	s.Node, s.Message, s.LastStart, s.LastStop, s.NextStart, s.Metrics = node, sum.Message, sum.LastStart, sum.LastStop, 0, nil
	s.State = StateStarting
	if sum.State != "" {
		s.State = parseState(sum.State)
	}
	return s
}

// parseState is the inverse of State.String.
func parseState(text string) State {
	for s := StateStopped; s <= StateScheduled; s++ {
		if s.String() == text {
			return s
		}
	}
	return StateStopped
}

// withTasks answers for a rule split into tasks: running once every task
// runs, stopped by error when one is (with its message), else starting
// while the rule is wanted running. Its metrics are the sums of the
// counters (*_total) of the rule's own tasks this node runs (not of those
// of a repartitioning stage, which count the same records once more).
func withTasks(s Status, tasks []TaskStatus) Status {
	s.Tasks, s.Message, s.NextStart, s.Metrics = tasks, "", 0, nil
	if s.Wanted != catalog.RuleRunning {
		return s
	}
	nodes := map[string]bool{}
	running := 0
	s.State = StateStarting
	for _, t := range tasks {
		if t.Node != "" && !nodes[t.Node] {
			nodes[t.Node] = true
			if s.Node != "" {
				s.Node += ","
			}
			s.Node += t.Node
		}
		switch parseState(t.State) {
		case StateRunning:
			running++
		case StateStoppedByError:
			if s.Message == "" {
				s.State, s.Message = StateStoppedByError, t.ID+": "+t.Message
			}
		}
		if t.LastStart > s.LastStart {
			s.LastStart = t.LastStart
		}
		for k, v := range t.Metrics {
			if t.Stage != "" || !strings.HasSuffix(k, "_total") {
				continue
			}
			if s.Metrics == nil {
				s.Metrics = map[string]any{}
			}
			switch x := v.(type) {
			case int64:
				n, _ := s.Metrics[k].(int64)
				s.Metrics[k] = n + x
			case float64:
				n, _ := s.Metrics[k].(float64)
				s.Metrics[k] = n + x
			}
		}
	}
	if running == len(tasks) && len(tasks) > 0 {
		s.State = StateRunning
	}
	return s
}
