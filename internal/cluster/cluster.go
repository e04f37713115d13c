// Package cluster knows the daemons that share one catalog: each writes a
// heartbeat row to the shared PostgreSQL catalog and reads the others'.
// With the embedded SQLite catalog the cluster is this daemon alone.
package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/clock"
)

// DefaultHeartbeat is how often a node writes its heartbeat row.
const DefaultHeartbeat = 2 * time.Second

// healthyBeats is how many heartbeats a node may miss and still read as
// healthy.
const healthyBeats = 3

// Node is one member as GET /cluster/nodes shows it.
type Node struct {
	ID       string    `json:"id"`
	Address  string    `json:"address"`
	Version  string    `json:"version"`
	Started  time.Time `json:"started"`
	LastSeen time.Time `json:"lastSeen"`
	// Healthy: seen within three heartbeats.
	Healthy bool `json:"healthy"`
	// Self marks the node that answered.
	Self bool `json:"self"`
	// Rules lists the rules the node holds a live lease on (rule
	// placement), by id; absent without a shared catalog.
	Rules []string `json:"rules,omitempty"`
}

// Beater is the shared store's side of membership (catalog.PostgresStore).
type Beater interface {
	Heartbeat(ctx context.Context, n catalog.NodeBeat) error
	Nodes(ctx context.Context) ([]catalog.NodeBeat, error)
}

var _ Beater = (*catalog.PostgresStore)(nil)

// Config configures a Membership.
type Config struct {
	// ID, Address and Version describe this node.
	ID, Address, Version string
	// Store is the shared store, or nil when the catalog is not shared.
	Store Beater
	// Heartbeat is the beat period. Default DefaultHeartbeat.
	Heartbeat time.Duration
	Clock     clock.Clock
	Logger    *slog.Logger
}

// Membership writes this node's heartbeat and lists the members.
type Membership struct {
	cfg     Config
	started time.Time
}

// New returns a Membership; Run beats.
func New(cfg Config) *Membership {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Wall{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Membership{cfg: cfg, started: cfg.Clock.Now().UTC().Truncate(time.Millisecond)}
}

// ID is this node's id.
func (m *Membership) ID() string { return m.cfg.ID }

// Run writes the heartbeat at once and then every period until ctx ends;
// a failed beat is logged and retried at the next period. Without a shared
// store it returns at once. The caller owns the goroutine.
func (m *Membership) Run(ctx context.Context) {
	if m.cfg.Store == nil {
		return
	}
	failing := false
	for {
		err := m.cfg.Store.Heartbeat(ctx, catalog.NodeBeat{ID: m.cfg.ID, Address: m.cfg.Address, Version: m.cfg.Version, Started: m.started})
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			m.cfg.Logger.Warn("cluster heartbeat failed; other nodes will see this one as unhealthy", "err", err)
			failing = true
		case err == nil && failing:
			m.cfg.Logger.Info("cluster heartbeat restored")
			failing = false
		}
		if !clock.Sleep(ctx, m.cfg.Clock, m.cfg.Heartbeat) {
			return
		}
	}
}

// Nodes lists the members by id. Without a shared store it is this node.
func (m *Membership) Nodes(ctx context.Context) ([]Node, error) {
	if m.cfg.Store == nil {
		now := m.cfg.Clock.Now().UTC()
		return []Node{{ID: m.cfg.ID, Address: m.cfg.Address, Version: m.cfg.Version, Started: m.started, LastSeen: now, Healthy: true, Self: true}}, nil
	}
	beats, err := m.cfg.Store.Nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster nodes: %w", err)
	}
	work := map[string][]string{}
	if ls, ok := m.cfg.Store.(interface {
		Leases(ctx context.Context) ([]catalog.Lease, error)
	}); ok {
		leases, err := ls.Leases(ctx)
		if err != nil {
			return nil, fmt.Errorf("cluster nodes: %w", err)
		}
		for _, l := range leases {
			if l.Live {
				work[l.Node] = append(work[l.Node], l.Rule)
			}
		}
	}
	out := make([]Node, 0, len(beats))
	for _, b := range beats {
		out = append(out, Node{
			ID: b.ID, Address: b.Address, Version: b.Version, Started: b.Started, LastSeen: b.LastSeen,
			Healthy: b.Age <= healthyBeats*m.cfg.Heartbeat, Self: b.ID == m.cfg.ID, Rules: work[b.ID],
		})
	}
	return out, nil
}
