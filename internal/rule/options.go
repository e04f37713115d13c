// Package rule defines rule definitions (eKuiper rule JSON) and their
// options, with validation that names the offending field.
package rule

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"
)

// Duration accepts a Go duration string ("5s") or integer milliseconds and
// marshals back as a string.
type Duration time.Duration

// UnmarshalJSON reads "5s" or 5000.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("invalid duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var ms int64
	if err := json.Unmarshal(b, &ms); err != nil {
		return fmt.Errorf("invalid duration %s: want a string like \"5s\" or milliseconds", b)
	}
	if ms > math.MaxInt64/int64(time.Millisecond) || ms < math.MinInt64/int64(time.Millisecond) {
		return fmt.Errorf("invalid duration %d ms: out of range", ms)
	}
	*d = Duration(time.Duration(ms) * time.Millisecond)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// RestartStrategy controls automatic restarts of a rule stopped by an error.
type RestartStrategy struct {
	Attempts     int      `json:"attempts"`
	Delay        Duration `json:"delay"`
	Multiplier   float64  `json:"multiplier"`
	MaxDelay     Duration `json:"maxDelay"`
	JitterFactor float64  `json:"jitterFactor"`
}

// Options are a rule's options (eKuiper names).
type Options struct {
	Debug                     bool            `json:"debug"`
	LogFilename               string          `json:"logFilename,omitempty"`
	IsEventTime               bool            `json:"isEventTime"`
	LateTolerance             Duration        `json:"lateTolerance"`
	Concurrency               int             `json:"concurrency"`
	BufferLength              int             `json:"bufferLength"`
	SendMetaToSink            bool            `json:"sendMetaToSink"`
	SendNilField              bool            `json:"sendNilField"`
	SendError                 bool            `json:"sendError"`
	Qos                       QoS             `json:"qos"`
	CheckpointInterval        Duration        `json:"checkpointInterval"`
	RestartStrategy           RestartStrategy `json:"restartStrategy"`
	Cron                      string          `json:"cron,omitempty"`
	Duration                  string          `json:"duration,omitempty"`
	DisableBufferFullDiscard  bool            `json:"disableBufferFullDiscard"`
	EnableSaveStateBeforeStop bool            `json:"enableSaveStateBeforeStop"`
	PlanOptimizeStrategy      map[string]any  `json:"planOptimizeStrategy,omitempty"`
	NotifySub                 bool            `json:"notifySub,omitempty"`
	// CronDatetimeRange limits cron runs to these periods (eKuiper shape).
	CronDatetimeRange []DatetimeRange `json:"cronDatetimeRange,omitempty"`
	// ForceExitTimeout bounds a graceful stop before the rule is aborted.
	ForceExitTimeout Duration       `json:"forceExitTimeout"`
	Experiment       map[string]any `json:"experiment,omitempty"`
	// SourceLogSync is when the durable log of push sources (qos >= 1)
	// reaches the disk: "none" (write only; survives a process crash, the
	// default), "periodic" (fsync at most every 100 ms) or "always" (fsync
	// each batch before acknowledging it upstream; survives power loss).
	// A rekuiper extension.
	SourceLogSync string `json:"sourceLogSync,omitempty"`
	// RepartitionPartitions is the partition count of the internal topic
	// created when a cluster repartitions the rule's Kafka stream by its
	// GROUP BY fields (docs/cluster.md); 0 takes the stream's topic's.
	// A rekuiper extension.
	RepartitionPartitions int `json:"repartitionPartitions,omitempty"`
}

// DatetimeRange is one entry of cronDatetimeRange: Begin/End as
// "YYYY-MM-DD hh:mm:ss" or BeginTimestamp/EndTimestamp in milliseconds.
type DatetimeRange struct {
	Begin          string `json:"begin,omitempty"`
	End            string `json:"end,omitempty"`
	BeginTimestamp int64  `json:"beginTimestamp,omitempty"`
	EndTimestamp   int64  `json:"endTimestamp,omitempty"`
}

// Upper bounds of the rule options that size memory or time. A larger value
// is refused at create and validate time (docs/limits.md lists them).
const (
	// MaxBufferLength bounds bufferLength: each channel of the rule holds
	// up to this many batches.
	MaxBufferLength = 1 << 20
	// MaxLateTolerance bounds lateTolerance: event-time rules keep rows
	// that long.
	MaxLateTolerance = Duration(24 * time.Hour)
	// MaxCheckpointInterval bounds checkpointInterval.
	MaxCheckpointInterval = Duration(24 * time.Hour)
	// MinCheckpointInterval is the shortest checkpointInterval (0 means the
	// default): a shorter one spends the rule's time writing checkpoints.
	MinCheckpointInterval = Duration(10 * time.Millisecond)
	// MaxRestartAttempts bounds restartStrategy.attempts.
	MaxRestartAttempts = 1_000_000
	// MaxRestartDelay bounds restartStrategy.delay and maxDelay.
	MaxRestartDelay = Duration(24 * time.Hour)
	// MaxRestartMultiplier bounds restartStrategy.multiplier.
	MaxRestartMultiplier = 100
	// MaxForceExitTimeout bounds forceExitTimeout.
	MaxForceExitTimeout = Duration(time.Hour)
	// MaxRepartitionPartitions bounds repartitionPartitions: each
	// partition is a task of the rule.
	MaxRepartitionPartitions = 10_000
)

// Validate checks option ranges and refuses options rekuiper does not
// implement. Errors name the option, the value and the bound.
func (o *Options) Validate() error {
	if err := o.unsupported(); err != nil {
		return err
	}
	switch o.SourceLogSync {
	case "", "none", "periodic", "always":
	default:
		return fmt.Errorf("invalid rule option sourceLogSync %q: must be none, periodic or always", o.SourceLogSync)
	}
	switch {
	case !o.Qos.Valid():
		return fmt.Errorf("invalid rule option qos %d: must be 0, 1 or 2", o.Qos)
	case o.BufferLength < 0:
		return fmt.Errorf("invalid rule option bufferLength %d: must not be negative", o.BufferLength)
	case o.BufferLength > MaxBufferLength:
		return fmt.Errorf("invalid rule option bufferLength %d: must be at most %d", o.BufferLength, MaxBufferLength)
	case o.Concurrency < 0:
		return fmt.Errorf("invalid rule option concurrency %d: must not be negative", o.Concurrency)
	case o.LateTolerance < 0:
		return fmt.Errorf("invalid rule option lateTolerance %s: must not be negative", time.Duration(o.LateTolerance))
	case o.LateTolerance > MaxLateTolerance:
		return durationBound("lateTolerance", o.LateTolerance, MaxLateTolerance)
	case o.CheckpointInterval < 0:
		return fmt.Errorf("invalid rule option checkpointInterval %s: must not be negative", time.Duration(o.CheckpointInterval))
	case o.CheckpointInterval > 0 && o.CheckpointInterval < MinCheckpointInterval:
		return fmt.Errorf("invalid rule option checkpointInterval %s: must be at least %s", time.Duration(o.CheckpointInterval), time.Duration(MinCheckpointInterval))
	case o.CheckpointInterval > MaxCheckpointInterval:
		return durationBound("checkpointInterval", o.CheckpointInterval, MaxCheckpointInterval)
	case o.ForceExitTimeout < 0:
		return fmt.Errorf("invalid rule option forceExitTimeout %s: must not be negative", time.Duration(o.ForceExitTimeout))
	case o.ForceExitTimeout > MaxForceExitTimeout:
		return durationBound("forceExitTimeout", o.ForceExitTimeout, MaxForceExitTimeout)
	case o.RepartitionPartitions < 0 || o.RepartitionPartitions > MaxRepartitionPartitions:
		return fmt.Errorf("invalid rule option repartitionPartitions %d: must be 0 to %d", o.RepartitionPartitions, MaxRepartitionPartitions)
	}
	return o.RestartStrategy.validate()
}

func (r RestartStrategy) validate() error {
	switch {
	case r.Attempts < 0:
		return fmt.Errorf("invalid rule option restartStrategy.attempts %d: must not be negative", r.Attempts)
	case r.Attempts > MaxRestartAttempts:
		return fmt.Errorf("invalid rule option restartStrategy.attempts %d: must be at most %d", r.Attempts, MaxRestartAttempts)
	case r.JitterFactor < 0 || r.JitterFactor >= 1:
		return fmt.Errorf("invalid rule option restartStrategy.jitterFactor %v: must be in [0, 1)", r.JitterFactor)
	case r.Multiplier < 0 || r.Multiplier > MaxRestartMultiplier || r.Multiplier != r.Multiplier:
		return fmt.Errorf("invalid rule option restartStrategy.multiplier %v: must be in [0, %d]", r.Multiplier, MaxRestartMultiplier)
	case r.Delay < 0:
		return fmt.Errorf("invalid rule option restartStrategy.delay %s: must not be negative", time.Duration(r.Delay))
	case r.Delay > MaxRestartDelay:
		return durationBound("restartStrategy.delay", r.Delay, MaxRestartDelay)
	case r.MaxDelay < 0:
		return fmt.Errorf("invalid rule option restartStrategy.maxDelay %s: must not be negative", time.Duration(r.MaxDelay))
	case r.MaxDelay > MaxRestartDelay:
		return durationBound("restartStrategy.maxDelay", r.MaxDelay, MaxRestartDelay)
	}
	return nil
}

func durationBound(name string, v, bound Duration) error {
	return fmt.Errorf("invalid rule option %s %s: must be at most %s", name, time.Duration(v), time.Duration(bound))
}

// ParseOptions overlays a JSON options object onto base. base is not
// changed: its maps and lists are copied before the overlay, which would
// otherwise write the rule's keys into them (and so into every later
// rule's defaults).
func ParseOptions(base Options, raw map[string]any) (Options, error) {
	if raw == nil {
		return base, nil
	}
	o := base.detached()
	b, err := json.Marshal(raw)
	if err != nil {
		return o, fmt.Errorf("encode rule options: %w", err)
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return o, fmt.Errorf("decode rule options: %w", err)
	}
	return o, o.Validate()
}

// detached returns a copy of o that shares no map or list with it, to
// decode a rule's options over.
func (o Options) detached() Options {
	o.PlanOptimizeStrategy = cloneTree(o.PlanOptimizeStrategy)
	o.Experiment = cloneTree(o.Experiment)
	o.CronDatetimeRange = slices.Clone(o.CronDatetimeRange)
	return o
}

// cloneTree copies a JSON object and the objects and lists nested in it.
func cloneTree(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneTree(x)
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = cloneValue(e)
		}
		return c
	}
	return v
}
