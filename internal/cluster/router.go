package cluster

import (
	"context"
	"maps"
	"slices"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
)

// Router is the placer's RuleRunner when rules may be split into tasks:
// a task's lease goes to Tasks, a whole rule's to the rule manager.
type Router struct {
	Rules RuleRunner
	Tasks *Tasks
}

var _ RuleRunner = Router{}

// Place starts the rule or task id here.
func (r Router) Place(id string) {
	if rule.IsTaskID(id) {
		r.Tasks.Place(id)
		return
	}
	r.Rules.Place(id)
}

// Unplace stops the rule or task id here.
func (r Router) Unplace(ctx context.Context, id string) error {
	if rule.IsTaskID(id) {
		return r.Tasks.Unplace(ctx, id)
	}
	return r.Rules.Unplace(ctx, id)
}

// Summary is the local status of the rule or task id.
func (r Router) Summary(id string) (catalog.RuleSummary, bool) {
	if rule.IsTaskID(id) {
		return r.Tasks.Summary(id)
	}
	return r.Rules.Summary(id)
}

// SplitPlacement is the rule manager's Placement when rules may be split
// into tasks: a Placer that also lists the tasks of a split rule, where
// they run and their state (rulemgr.TaskLister).
type SplitPlacement struct {
	placer *Placer
	tasks  *Tasks
}

var (
	_ rulemgr.Placement     = SplitPlacement{}
	_ rulemgr.TaskLister    = SplitPlacement{}
	_ rulemgr.TaskRestarter = SplitPlacement{}
)

// NewSplitPlacement combines the placer and the tasks it places.
func NewSplitPlacement(p *Placer, ts *Tasks) SplitPlacement {
	return SplitPlacement{placer: p, tasks: ts}
}

// Holds reports whether this node holds the lease of whole rule id.
func (s SplitPlacement) Holds(id string) bool { return s.placer.Holds(id) }

// Remote is the placer's Remote.
func (s SplitPlacement) Remote(id string) (string, catalog.RuleSummary, bool) {
	return s.placer.Remote(id)
}

// Kick asks the placer for a pass.
func (s SplitPlacement) Kick() { s.placer.Kick() }

// Tasks lists the tasks of rule id when it is split or spread: those this
// node runs with their counters, the others with the node holding their
// lease and the state it published (as of the last placement pass), and
// those no node holds as stopped. A spread rule's tasks are the copies of
// the healthy nodes and those of any node still holding a live lease.
func (s SplitPlacement) Tasks(id string) ([]rulemgr.TaskStatus, bool) {
	sp, ok := s.tasks.Split(id)
	if !ok || (sp.Partitions == 0 && !sp.Spread) {
		return nil, false
	}
	ids := taskIDs(id, sp)
	if sp.Spread {
		ids = s.placer.copies(id)
	}
	out := make([]rulemgr.TaskStatus, 0, len(ids))
	for _, tid := range ids {
		if st, ok := s.tasks.local(tid); ok {
			out = append(out, st)
			continue
		}
		st := rulemgr.TaskStatus{ID: tid, State: rulemgr.StateStopped.String()}
		if _, p, repart, ok := rule.ParseTask(tid); ok && !sp.Spread {
			st.Partition, st.Stage = &p, stage(repart)
		}
		if l, ok := s.placer.lease(tid); ok && l.Live {
			st.Node, st.State, st.Message, st.LastStart = l.Node, l.Summary.State, l.Summary.Message, l.Summary.LastStart
			if st.State == "" {
				st.State = rulemgr.StateStarting.String()
			}
		}
		out = append(out, st)
	}
	return out, true
}

// stage is TaskStatus.Stage of a task.
func stage(repartition bool) string {
	if repartition {
		return "repartition"
	}
	return ""
}

// lease returns the lease row of id as of the last placement pass.
func (p *Placer) lease(id string) (catalog.Lease, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.remote[id]
	return l, ok
}

// RestartTasks restarts the tasks of rule id that run on this node
// (rulemgr.TaskRestarter); the other nodes restart theirs when they read
// the rule's wanted state written by the restart.
func (s SplitPlacement) RestartTasks(id string) { s.tasks.Changed(id) }

// copies lists the ids of the copies of spread rule id: one per healthy
// node and per node holding a live lease on its copy, as of the last
// placement pass, sorted.
func (p *Placer) copies(id string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[string]bool{}
	for _, n := range p.healthy {
		seen[rule.CopyID(id, n)] = true
	}
	for tid, l := range p.remote {
		if r, _, ok := rule.ParseCopyID(tid); ok && r == id && l.Live {
			seen[tid] = true
		}
	}
	for tid := range p.held {
		if r, _, ok := rule.ParseCopyID(tid); ok && r == id {
			seen[tid] = true
		}
	}
	out := slices.Collect(maps.Keys(seen))
	slices.Sort(out)
	return out
}
