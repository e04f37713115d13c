package checkpoint

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/runtime"
)

// Injector injects barrier id into one source's read loop, between two
// records. The source reports its offset at that point with
// Coordinator.SourceReady from its own goroutine.
type Injector interface {
	InjectBarrier(id uint64)
}

// Committer is told when a checkpoint is durable, so that transactional
// sinks commit and sources acknowledge upstream or truncate their logs.
// It is called from the goroutine that completed the checkpoint. When every
// committer succeeded the checkpoint is marked committed in the store.
type Committer interface {
	CheckpointCommitted(cp *Checkpoint) error
}

// Config describes one rule's checkpointing.
type Config struct {
	RuleID      string
	Fingerprint string
	Interval    time.Duration
	Store       Storage
	Clock       clock.Clock
	Logger      *slog.Logger
	// Sources lists the barrier injection points by source key.
	Sources map[string]Injector
	// Sinks is the number of sinks that must acknowledge each barrier.
	Sinks int
	// Committers are notified of every durable checkpoint (transactional
	// sinks commit then).
	Committers []Committer
	// Followers are notified once every committer succeeded and the
	// checkpoint is marked committed: no restore goes back behind it any
	// more, so what only an older restore would need (source log
	// segments) may go.
	Followers []Committer
	// FirstID is the id after which numbering continues (the restored
	// checkpoint's id, or 0).
	FirstID uint64
}

// Stats are the coordinator's figures for rule status.
type Stats struct {
	Completed     int64
	Abandoned     int64
	LastID        uint64
	LastTakenAt   int64 // ms
	LastDuration  time.Duration
	LastSizeBytes int
	LastError     string
}

// Coordinator triggers checkpoints every Interval, collects source offsets,
// the operators' snapshot and sink acknowledgements for each barrier, and
// writes the checkpoint once all have arrived. One checkpoint is in flight
// at a time; one that has not completed when the next is due is abandoned
// and counted. Its methods are safe for concurrent use; it owns one timer.
type Coordinator struct {
	cfg Config

	mu      sync.Mutex
	nextID  uint64
	pending *pending
	stats   Stats
	timer   clock.Timer
	stopped bool
}

type pending struct {
	id      uint64
	started int64
	offsets map[string][]byte
	snap    *runtime.Snapshot
	acks    map[int]bool
}

// NewCoordinator prepares a coordinator; Start arms its timer.
func NewCoordinator(cfg Config) *Coordinator {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Coordinator{cfg: cfg, nextID: cfg.FirstID + 1}
}

// SetSources sets the barrier injection points, the committers and the
// followers to notify (see Config); call it before Start.
func (c *Coordinator) SetSources(sources map[string]Injector, committers, followers []Committer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg.Sources = sources
	c.cfg.Committers = append(c.cfg.Committers, committers...)
	c.cfg.Followers = append(c.cfg.Followers, followers...)
}

// Start schedules the first checkpoint one interval from now.
func (c *Coordinator) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.arm()
}

// Stop cancels the timer; a checkpoint in flight is abandoned.
func (c *Coordinator) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.pending = nil
}

// Stats returns a copy of the figures.
func (c *Coordinator) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

func (c *Coordinator) arm() {
	if c.stopped || c.cfg.Interval <= 0 {
		return
	}
	c.timer = c.cfg.Clock.AfterFunc(c.cfg.Interval, c.Trigger)
}

// Trigger starts a checkpoint now (the timer calls it; tests may too).
func (c *Coordinator) Trigger() {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	if c.pending != nil {
		c.stats.Abandoned++
		c.stats.LastError = fmt.Sprintf("checkpoint %d abandoned: not complete after %s", c.pending.id, c.cfg.Interval)
		c.cfg.Logger.Warn("checkpoint abandoned", "rule", c.cfg.RuleID, "id", c.pending.id)
	}
	id := c.nextID
	c.nextID++
	c.pending = &pending{id: id, started: clock.NowMilli(c.cfg.Clock), offsets: map[string][]byte{}, acks: map[int]bool{}}
	sources := c.cfg.Sources
	c.arm()
	c.mu.Unlock()
	for _, s := range sources {
		s.InjectBarrier(id)
	}
}

// SourceReady records a source's offset at barrier id.
func (c *Coordinator) SourceReady(id uint64, key string, offset []byte) {
	c.update(id, func(p *pending) { p.offsets[key] = offset })
}

// OnSnapshot receives the operators' snapshot (runtime.Config.OnSnapshot).
func (c *Coordinator) OnSnapshot(s *runtime.Snapshot) {
	c.update(s.ID, func(p *pending) { p.snap = s })
}

// OnSinkAck records that sink i delivered everything before barrier id
// (runtime.Config.OnSinkAck).
func (c *Coordinator) OnSinkAck(id uint64, sink int) {
	c.update(id, func(p *pending) { p.acks[sink] = true })
}

func (c *Coordinator) update(id uint64, f func(*pending)) {
	c.mu.Lock()
	p := c.pending
	if p == nil || p.id != id {
		c.mu.Unlock()
		return
	}
	f(p)
	if p.snap == nil || len(p.acks) < c.cfg.Sinks || len(p.offsets) < len(c.cfg.Sources) {
		c.mu.Unlock()
		return
	}
	c.pending = nil
	c.mu.Unlock()
	c.complete(p)
}

func (c *Coordinator) complete(p *pending) {
	cp := &Checkpoint{
		ID: p.id, RuleID: c.cfg.RuleID, Fingerprint: c.cfg.Fingerprint,
		Ops: p.snap.Ops, State: p.snap.State, Offsets: p.offsets, TakenAt: p.started,
	}
	size, err := c.cfg.Store.Save(cp)
	c.mu.Lock()
	if err != nil {
		c.stats.Abandoned++
		c.stats.LastError = err.Error()
		c.mu.Unlock()
		c.cfg.Logger.Error("checkpoint not saved", "rule", c.cfg.RuleID, "id", p.id, "err", err)
		return
	}
	c.stats.Completed++
	c.stats.LastID = p.id
	c.stats.LastTakenAt = p.started
	c.stats.LastDuration = time.Duration(clock.NowMilli(c.cfg.Clock)-p.started) * time.Millisecond
	c.stats.LastSizeBytes = size
	committers, followers := c.cfg.Committers, c.cfg.Followers
	c.mu.Unlock()
	ok := true
	for _, cm := range committers {
		if err := cm.CheckpointCommitted(cp); err != nil {
			ok = false
			c.cfg.Logger.Error("checkpoint commit failed", "rule", c.cfg.RuleID, "id", p.id, "err", err)
			c.mu.Lock()
			c.stats.LastError = err.Error()
			c.mu.Unlock()
		}
	}
	if !ok {
		return
	}
	if err := c.cfg.Store.MarkCommitted(c.cfg.RuleID, p.id); err != nil {
		c.cfg.Logger.Error("mark checkpoint committed", "rule", c.cfg.RuleID, "id", p.id, "err", err)
		return
	}
	for _, f := range followers {
		if err := f.CheckpointCommitted(cp); err != nil {
			c.cfg.Logger.Warn("after checkpoint commit", "rule", c.cfg.RuleID, "id", p.id, "err", err)
		}
	}
}
