package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/checkpoint"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/builtin"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/connector/membus"
	"github.com/rekuiper/rekuiper/internal/engine"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/jsudf"
	"github.com/rekuiper/rekuiper/internal/netlimit"
	"github.com/rekuiper/rekuiper/internal/payload"
	"github.com/rekuiper/rekuiper/internal/schema"
	"github.com/rekuiper/rekuiper/internal/stream"
	"github.com/rekuiper/rekuiper/internal/tap"
	"github.com/rekuiper/rekuiper/internal/tracing"
)

// Extend registers extensions on the daemon's registries, which already
// hold every built-in connector and function (so a duplicate name is
// refused). The public SDK builds custom daemons with it.
type Extend func(conns *connector.Registry, funcs *function.Registry) error

// engineParts is what rules run on: the registries of connector types,
// functions and connections, the memory bus, the taps, the tracing and
// the engine over them.
type engineParts struct {
	engine      *engine.Engine
	connectors  *connector.Registry
	functions   *function.Registry
	connections *connection.Registry
	memory      *membus.Bus
	taps        *tap.Hub
	tracing     *tracing.Service
	push        *pushServer
}

// clusterRole is how the engine takes part in a cluster of nodes on one
// shared catalog: its checkpoints go to the shared database, the offsets
// of local source logs are recorded under the node, and the MQTT session
// of a rule at qos >= 1 is derived from the cluster (scope) instead of
// the node, so that the node that takes a rule over resumes its state,
// offsets and broker session. Nil for a node alone.
type clusterRole struct {
	checkpoints checkpoint.Storage
	node, scope string
}

// newEngineParts builds the registries (every built-in connector, MQTT
// included, then what extend adds), the shared push endpoint server, the
// tracing and the engine. On error, what it built is released.
func newEngineParts(cfg *config.Config, cat *catalog.Catalog, logger *slog.Logger, nodeID string, extend Extend, role *clusterRole, pool *netlimit.Pool) (p *engineParts, err error) {
	p = &engineParts{connections: connection.NewRegistry(clock.Wall{}), memory: membus.New(), taps: tap.NewHub()}
	defer func() {
		if err != nil {
			p.close(logger)
		}
	}()
	p.connectors = connector.NewRegistryWith(connector.Env{Logger: logger, Clock: clock.Wall{}, Connections: p.connections})
	if err := builtin.Register(p.connectors); err != nil {
		return p, err
	}
	p.functions = function.Builtins()
	if extend != nil {
		if err := extend(p.connectors, p.functions); err != nil {
			return p, fmt.Errorf("register extensions: %w", err)
		}
	}
	loc := time.UTC
	if cfg.Basic.Timezone != "" {
		if loc, err = time.LoadLocation(cfg.Basic.Timezone); err != nil {
			return p, fmt.Errorf("timezone %q: %w", cfg.Basic.Timezone, err)
		}
	}
	aesKey, err := payload.ParseAESKey(cfg.Basic.AESKey)
	if err != nil {
		return p, err
	}
	if p.push, err = newPushServer(cfg, pool, logger); err != nil {
		return p, err
	}
	if p.tracing, err = tracing.New(cfg.OpenTelemetry, tracing.Options{Logger: logger, Clock: clock.Wall{}}); err != nil {
		return p, err
	}
	p.functions.SetResolver(jsudf.Resolver(cat, jsudf.LimitsFromConfig(cfg)))
	ec := engine.Config{
		Catalog:  cat,
		Registry: p.connectors,
		Deps: connector.Deps{
			Logger: logger, Clock: clock.Wall{}, Memory: p.memory, HTTP: p.push, DataDir: cfg.Paths.Data,
			Connections: p.connections, AESKey: aesKey, Guard: cfg.Guard(),
		},
		Paths:                     cfg.Paths,
		Environ:                   cfg.Environ,
		Clock:                     clock.Wall{},
		Location:                  loc,
		IgnoreCase:                cfg.Basic.IgnoreCase,
		Logger:                    logger,
		Funcs:                     p.functions,
		Streams:                   stream.NewManager(),
		Checkpoints:               &checkpoint.Store{Dir: cfg.Paths.Data},
		DefaultCheckpointInterval: cfg.Rule.CheckpointInterval.Std(),
		SinkDefaults:              cfg.Sink,
		NodeID:                    nodeID,
		Schemas:                   schema.New(cat, cfg.Paths.Etc),
		Taps:                      p.taps,
		Tracing:                   p.tracing,
	}
	if role != nil {
		ec.Checkpoints, ec.ClusterNode, ec.SessionScope = role.checkpoints, role.node, role.scope
	}
	if p.engine, err = engine.New(ec); err != nil {
		return p, err
	}
	if err := p.engine.StartLookupTables(context.Background()); err != nil {
		logger.Warn("memory lookup tables not started", "err", err)
	}
	return p, nil
}

// close releases what newEngineParts built, after the last rule stopped.
func (p *engineParts) close(logger *slog.Logger) {
	if p.engine != nil {
		p.engine.CloseLookupTables(context.Background())
	}
	if p.tracing != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := p.tracing.Shutdown(ctx); err != nil {
			logger.Warn("export the last trace spans", "err", err)
		}
		cancel()
	}
	if p.push != nil {
		p.push.Close()
	}
	if p.connectors != nil {
		if err := p.connectors.Close(); err != nil && !errors.Is(err, context.Canceled) {
			logger.Warn("close shared connector clients", "err", err)
		}
	}
}
