// Package engine builds a rule from its definition and starts it: it
// resolves the streams the rule reads from the catalog, plans the SQL
// (internal/planner), builds the sinks of its actions, restores its last
// checkpoint (qos >= 1), attaches its sources and starts the checkpoint
// coordinator; internal/runtime then runs it. The rule manager
// (internal/rulemgr) decides when; the daemon (internal/daemon) builds the
// one Engine. Where a rule starts: Engine.Start in start.go; the started
// rule: running.go; restoring its state: restore.go.
package engine

import (
	"encoding/json"
	"errors"
	"log/slog"
	"sort"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/checkpoint"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/stream"
	"github.com/rekuiper/rekuiper/internal/tap"
	"github.com/rekuiper/rekuiper/internal/tracing"
)

// Config is what an Engine is built from; New copies it, so it cannot
// change under running rules.
type Config struct {
	Catalog  *catalog.Catalog
	Registry *connector.Registry
	Deps     connector.Deps
	Paths    config.Paths
	Environ  []string
	Clock    clock.Clock
	Location *time.Location
	// IgnoreCase matches column names case-insensitively (kuiper.yaml
	// basic.ignoreCase).
	IgnoreCase bool
	Logger     *slog.Logger
	Funcs      *function.Registry
	Streams    *stream.Manager
	// Checkpoints keeps the checkpoints of rules at qos >= 1: the local
	// files of the data folder, or the cluster's shared database.
	Checkpoints checkpoint.Storage
	// DefaultCheckpointInterval applies when a rule's is zero.
	DefaultCheckpointInterval time.Duration
	// SinkDefaults are the sink cache defaults of kuiper.yaml `sink:`.
	SinkDefaults config.SinkDefaults
	// NodeID identifies this daemon in names kept by other systems (the
	// derived MQTT client id of a rule at qos >= 1); it must be the same
	// after a restart. Empty uses the data folder's path.
	NodeID string
	// ClusterNode is set when several nodes share the rules and their
	// checkpoints: the offsets of local source logs are then recorded
	// under this node's id, so that another node does not rewind its own
	// log to them.
	ClusterNode string
	// SessionScope, when set, replaces NodeID in the derived MQTT client
	// id of a rule at qos >= 1: on a cluster it names the cluster, so the
	// node that takes a rule over resumes the broker session its
	// previous node left.
	SessionScope string
	// Schemas resolves the SCHEMAID of protobuf streams and sinks; nil
	// refuses FORMAT="protobuf".
	Schemas format.Schemas
	// Taps, when set, receives every running rule's emissions for the
	// live output tap (GET /rules/{id}/tap).
	Taps *tap.Hub
	// Tracing records the data traces of the rules it is turned on for;
	// nil traces nothing.
	Tracing *tracing.Service
}

// Engine builds and starts the daemon's rules (it implements
// rulemgr.Runner); its configuration is fixed by New.
type Engine struct {
	cfg       Config
	memTables memoryTables
	confFiles config.ConfKeyFiles // etc/ confKey files, parsed once per change
}

// New returns an Engine over cfg. Registry and Funcs are required; Clock
// defaults to the wall clock, Location to UTC, Logger to a discarding
// one, Streams to a new subscription manager.
func New(cfg Config) (*Engine, error) {
	if cfg.Registry == nil || cfg.Funcs == nil {
		return nil, errors.New("engine: a connector registry and a function registry are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Wall{}
	}
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Streams == nil {
		cfg.Streams = stream.NewManager()
	}
	return &Engine{cfg: cfg}, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func propsKey(typ string, props map[string]any) string {
	b, _ := json.Marshal(props)
	return typ + "|" + string(b)
}
