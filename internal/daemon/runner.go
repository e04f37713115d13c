// Package daemon wires kuiperd's engine: every built-in connector, the
// shared push endpoint server, the subscription manager and the checkpoint
// store. cmd/kuiperd and cmd/quickstart both build their runner here.
package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/checkpoint"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/cluster"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/builtin"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/connector/kafka"
	"github.com/rekuiper/rekuiper/internal/connector/membus"
	"github.com/rekuiper/rekuiper/internal/connector/mqtt"
	"github.com/rekuiper/rekuiper/internal/connector/redis"
	"github.com/rekuiper/rekuiper/internal/connector/sqldb"
	"github.com/rekuiper/rekuiper/internal/engine"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/jsudf"
	"github.com/rekuiper/rekuiper/internal/payload"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/schema"
	"github.com/rekuiper/rekuiper/internal/stream"
	"github.com/rekuiper/rekuiper/internal/tap"
	"github.com/rekuiper/rekuiper/internal/tracing"
)

// Runner is the engine's rule runner with the registry of the connections
// its connectors hold.
type Runner struct {
	*engine.Runner
	conns *connection.Registry
}

// Connections reports the connections the rules' connectors hold (read by
// the REST server for GET /connections).
func (r *Runner) Connections() *connection.Registry { return r.conns }

// JoinCluster makes the rules' checkpoints go to the cluster's shared
// storage instead of the data folder, records the offsets of local source
// logs under node, and derives the MQTT session of a rule at qos >= 1
// from scope (the cluster) instead of the node, so that the node that
// takes a rule over resumes its state, its offsets and its broker
// session. Call it before any rule starts.
func (r *Runner) JoinCluster(s checkpoint.Storage, node, scope string) {
	r.Checkpoints = s
	r.ClusterNode = node
	r.SessionScope = scope
}

// ConnectorRegistry is the registry of the connector types rules may use
// (read by the REST server's /metadata routes).
func (r *Runner) ConnectorRegistry() *connector.Registry { return r.Registry }

// FunctionRegistry is the registry of the functions rules may call.
func (r *Runner) FunctionRegistry() *function.Registry { return r.Funcs }

// MemoryBus is the bus of memory topics (read by GET /memory/events).
func (r *Runner) MemoryBus() *membus.Bus { return r.Deps.Memory }

// TapHub carries the running rules' emissions to GET /rules/{id}/tap.
func (r *Runner) TapHub() *tap.Hub { return r.Taps }

// TraceService is the rules' data tracing (read by the trace routes).
func (r *Runner) TraceService() *tracing.Service { return r.Tracing }

// NewRunner wires the engine: the connector registry, the connection
// registry (shared clients and their status), the shared push endpoint
// server, the subscription manager and the checkpoint store. It matches
// app.RunnerFactory and returns a *Runner; the returned func releases what
// it started.
func NewRunner(cfg *config.Config, cat *catalog.Catalog, logger *slog.Logger) (rulemgr.Runner, func(), error) {
	return newRunner(cfg, cat, logger, nil)
}

// Extend registers extensions on a runner's registries, which already hold
// every built-in connector and function (so a duplicate name is refused).
type Extend func(conns *connector.Registry, funcs *function.Registry) error

// NewRunnerWith is NewRunner whose registries also hold what extend
// registers; a registration error fails the daemon's start. The public SDK
// builds custom daemons with it.
func NewRunnerWith(extend Extend) func(*config.Config, *catalog.Catalog, *slog.Logger) (rulemgr.Runner, func(), error) {
	return func(cfg *config.Config, cat *catalog.Catalog, logger *slog.Logger) (rulemgr.Runner, func(), error) {
		return newRunner(cfg, cat, logger, extend)
	}
}

func newRunner(cfg *config.Config, cat *catalog.Catalog, logger *slog.Logger, extend Extend) (rulemgr.Runner, func(), error) {
	reg := connector.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		return nil, nil, err
	}
	pool := mqtt.NewPool(logger, clock.Wall{})
	if err := mqtt.Register(reg, pool); err != nil {
		return nil, nil, fmt.Errorf("register mqtt connector: %w", err)
	}
	conns, err := newConnections(pool)
	if err != nil {
		return nil, nil, err
	}
	funcs := function.Builtins()
	if extend != nil {
		if err := extend(reg, funcs); err != nil {
			pool.Close() //nolint:errcheck // nothing connected yet
			return nil, nil, fmt.Errorf("register extensions: %w", err)
		}
	}
	loc := time.UTC
	if cfg.Basic.Timezone != "" {
		l, err := time.LoadLocation(cfg.Basic.Timezone)
		if err != nil {
			return nil, nil, fmt.Errorf("timezone %q: %w", cfg.Basic.Timezone, err)
		}
		loc = l
	}
	nodeID, err := cluster.LoadNodeID(cfg.Paths.Data)
	if err != nil {
		return nil, nil, err
	}
	aesKey, err := payload.ParseAESKey(cfg.Basic.AESKey)
	if err != nil {
		return nil, nil, err
	}
	push, err := newPushServer(cfg, logger)
	if err != nil {
		return nil, nil, err
	}
	traces, err := tracing.New(cfg.OpenTelemetry, tracing.Options{Logger: logger, Clock: clock.Wall{}})
	if err != nil {
		push.Close()
		return nil, nil, err
	}
	funcs.SetResolver(jsudf.Resolver(cat, jsudf.LimitsFromConfig(cfg)))
	rn := &engine.Runner{
		Catalog:  cat,
		Registry: reg,
		Deps: connector.Deps{
			Logger: logger, Clock: clock.Wall{}, Memory: membus.New(), HTTP: push, DataDir: cfg.Paths.Data,
			Connections: conns, AESKey: aesKey, Guard: cfg.Guard(),
		},
		Paths:                     cfg.Paths,
		Environ:                   cfg.Environ,
		Clock:                     clock.Wall{},
		Location:                  loc,
		IgnoreCase:                cfg.Basic.IgnoreCase,
		Logger:                    logger,
		Funcs:                     funcs,
		Streams:                   stream.NewManager(),
		Checkpoints:               &checkpoint.Store{Dir: cfg.Paths.Data},
		DefaultCheckpointInterval: cfg.Rule.CheckpointInterval.Std(),
		SinkDefaults:              cfg.Sink,
		NodeID:                    nodeID,
		Schemas:                   schema.New(cat, cfg.Paths.Etc),
		Taps:                      tap.NewHub(),
		Tracing:                   traces,
	}
	if err := rn.StartLookupTables(context.Background()); err != nil {
		logger.Warn("memory lookup tables not started", "err", err)
	}
	release := func() {
		rn.CloseLookupTables(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := traces.Shutdown(ctx); err != nil {
			logger.Warn("export the last trace spans", "err", err)
		}
		cancel()
		push.Close()
		if err := pool.Close(); err != nil {
			logger.Warn("close mqtt connections", "err", err)
		}
	}
	return &Runner{Runner: rn, conns: conns}, release, nil
}

// newConnections makes the connection registry: the MQTT pool reports into
// it, and named connections of the connector types that report are found
// by the key of their properties.
func newConnections(pool *mqtt.Pool) (*connection.Registry, error) {
	conns := connection.NewRegistry(clock.Wall{})
	pool.ReportTo(conns)
	for _, k := range []struct {
		typ string
		f   connection.KeyFunc
	}{
		{mqtt.Type, mqtt.ConnectionKey},
		{kafka.Type, kafka.ConnectionKey},
		{redis.Type, redis.ConnectionKey},
		{redis.PubType, redis.ConnectionKey},
		{redis.SubType, redis.ConnectionKey},
		{sqldb.Type, sqldb.ConnectionKey},
	} {
		if err := conns.SetKeyFunc(k.typ, k.f); err != nil {
			return nil, err
		}
	}
	return conns, nil
}
