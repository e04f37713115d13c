// Package daemon wires kuiperd's engine: every built-in connector, the
// shared push endpoint server, the subscription manager and the checkpoint
// store. cmd/kuiperd and cmd/quickstart both build their runner here.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/checkpoint"
	"github.com/rekuiper/rekuiper/internal/clock"
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
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/stream"
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
	mux := connector.NewMux()
	stopPush := servePush(cfg, mux, logger)
	rn := &engine.Runner{
		Catalog:  cat,
		Registry: reg,
		Deps: connector.Deps{
			Logger: logger, Clock: clock.Wall{}, Memory: membus.New(), HTTP: mux, DataDir: cfg.Paths.Data,
			Connections: conns,
		},
		Paths:                     cfg.Paths,
		Environ:                   cfg.Environ,
		Clock:                     clock.Wall{},
		Location:                  loc,
		Logger:                    logger,
		Funcs:                     funcs,
		Streams:                   stream.NewManager(),
		Checkpoints:               &checkpoint.Store{Dir: cfg.Paths.Data},
		DefaultCheckpointInterval: cfg.Rule.CheckpointInterval.Std(),
		SinkDefaults:              cfg.Sink,
	}
	release := func() {
		stopPush()
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

// servePush serves push endpoints (httppush, websocket server) on
// source.httpServerIp:httpServerPort. A port that cannot be bound is logged,
// not fatal: rules without push sources do not need it.
func servePush(cfg *config.Config, mux http.Handler, logger *slog.Logger) func() {
	addr := net.JoinHostPort(cfg.Source.HTTPServerIP, strconv.Itoa(cfg.Source.HTTPServerPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		logger.Warn("push endpoint server not started", "addr", addr, "err", err)
		return func() {}
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("push endpoint server failed", "err", err)
		}
	}()
	logger.Info("push endpoint server listening", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx) //nolint:errcheck // best effort at exit
	}
}
