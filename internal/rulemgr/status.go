package rulemgr

import (
	"math"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/rule"
)

// State is the state a rule is in (not the wanted state).
type State int

// Rule states.
const (
	StateStopped State = iota
	StateStarting
	StateRunning
	StateStopping
	StateStoppedByError
	// StateScheduled: a cron rule waiting for its next firing.
	StateScheduled
)

// String returns eKuiper's status text.
func (s State) String() string {
	switch s {
	case StateStarting:
		return "starting"
	case StateRunning:
		return "running"
	case StateStopping:
		return "stopping"
	case StateStoppedByError:
		return "stopped by error"
	case StateScheduled:
		return "stopped: waiting for next schedule."
	default:
		return "stopped"
	}
}

// Status is a snapshot of one rule.
type Status struct {
	ID    string
	State State
	// Message is the last error of a rule stopped by error.
	Message string
	// Timestamps in Unix milliseconds, 0 when unset. NextStart is the next
	// cron firing or automatic restart.
	LastStart, LastStop, NextStart int64
	// Wanted is the persisted wanted state.
	Wanted catalog.RuleState
	// Metrics are the running rule's metrics (nil when not running).
	Metrics map[string]any
	// Restarts counts automatic restarts since the last user command.
	Restarts int
	// Node is the node that runs the rule when another node does (the
	// status is then the summary it published, without metrics); empty
	// when this node answers for it. For a rule split into tasks, the
	// nodes that run them, comma-separated.
	Node string
	// Tasks lists the tasks of a rule that runs as one task per input
	// partition (a cluster's partitioned rule); nil otherwise.
	Tasks []TaskStatus
}

// TaskStatus is one task of a partitioned rule, or one node's copy of a
// spread rule: the node running it and the state it published (metrics
// only for tasks this node runs).
type TaskStatus struct {
	ID string `json:"id"`
	// Partition is the partition a task reads; nil for a spread rule's
	// copy, which reads every partition its node's share brings.
	Partition *int `json:"partition,omitempty"`
	// Stage is "repartition" for a task of the stage that re-keys the
	// rule's stream into its internal topic (Partition is then the
	// stream's); "" for the rule's own tasks.
	Stage     string         `json:"stage,omitempty"`
	Node      string         `json:"node"`
	State     string         `json:"status"`
	Message   string         `json:"message,omitempty"`
	LastStart int64          `json:"lastStartTimestamp"`
	Metrics   map[string]any `json:"metrics,omitempty"`
}

// backoff returns the delay before automatic restart number n (0-based):
// delay·multiplier^n capped at maxDelay, then spread by ±jitterFactor using
// r in [0, 1).
func backoff(rs rule.RestartStrategy, n int, r float64) time.Duration {
	d := float64(rs.Delay)
	mult := rs.Multiplier
	if mult < 1 {
		mult = 1
	}
	d *= math.Pow(mult, float64(n))
	if max := float64(rs.MaxDelay); max > 0 && d > max {
		d = max
	}
	if rs.JitterFactor > 0 {
		d *= 1 + rs.JitterFactor*(2*r-1)
	}
	if d < 0 || math.IsNaN(d) {
		d = 0
	}
	if d > float64(math.MaxInt64) {
		d = float64(math.MaxInt64)
	}
	return time.Duration(d)
}
