// Package daemon is kuiperd built once: New turns a loaded configuration
// into one Daemon value whose parts (catalog, rule manager, engine,
// connector and function registries, connections, memory bus, taps,
// tracing, cluster membership, REST API) are named and fixed after
// construction; Serve runs it until its context ends; Run is the whole
// process (configuration, logging, crash reports, New, Serve, Close).
// cmd/kuiperd, cmd/quickstart, the SDK and every test that needs a daemon
// build it here, so the wiring exists once.
//
// The path of a rule: the REST API (internal/server) or the catalog at
// start hands it to the rule manager (internal/rulemgr: its lifecycle),
// which asks the engine (internal/engine: build it from its definition)
// to start it; the runtime (internal/runtime) runs it.
package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/rekuiper/rekuiper/internal/auth"
	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/certs"
	"github.com/rekuiper/rekuiper/internal/cluster"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/connector/membus"
	"github.com/rekuiper/rekuiper/internal/engine"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/jsudf"
	"github.com/rekuiper/rekuiper/internal/metrics"
	"github.com/rekuiper/rekuiper/internal/netlimit"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/server"
	"github.com/rekuiper/rekuiper/internal/tap"
	"github.com/rekuiper/rekuiper/internal/tracing"
	"github.com/rekuiper/rekuiper/internal/version"
)

// Options are what New needs beyond the configuration.
type Options struct {
	// Logger receives the daemon's log; nil builds it from the
	// configuration (console log to Stdout, file log, syslog).
	Logger *slog.Logger
	// Stdout receives the listening banner and the console log; nil
	// discards them.
	Stdout io.Writer
	// Version and Commit are reported in the banner and by GET /; an
	// empty Version means the binary's own (package version).
	Version, Commit string
	// Extend registers extensions after the built-ins (the SDK's).
	Extend Extend
	// Ready, when set, is called by Serve with the REST address once it
	// accepts connections.
	Ready func(addr string)
	// Store, when set, is the catalog's store, already open (a test's
	// wrapper); nil opens the one basic.catalog names. The daemon closes
	// it either way.
	Store catalog.Store

	// crashed summarizes the previous process's crash report (Run).
	crashed string
}

// Daemon is one kuiperd: built by New, run by Serve, released by Close.
type Daemon struct {
	cfg     *config.Config
	opts    Options
	logger  *slog.Logger
	restTLS *tls.Config
	// pool is the connection budget of every server of the daemon.
	pool *netlimit.Pool

	store   catalog.Store
	catalog *catalog.Catalog
	parts   *engineParts
	members *cluster.Membership
	tasks   *cluster.Tasks
	placer  *cluster.Placer
	rules   *rulemgr.Manager
	history *metrics.History
	api     *server.Server

	closeLog func()
	closed   bool
}

// New builds the daemon of cfg: it opens the catalog, builds the engine
// and the rule manager over it and the REST API over both. Nothing serves
// and no rule runs until Serve. On error, what it opened is closed.
func New(ctx context.Context, cfg *config.Config, o Options) (d *Daemon, err error) {
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Version == "" {
		v := version.Get()
		o.Version, o.Commit = v.Version, v.Commit
	}
	rule.RegisterConfigSecrets(cfg) // error texts and logs mask them
	built := &Daemon{cfg: cfg, opts: o, logger: o.Logger, store: o.Store, closeLog: func() {}}
	defer func() {
		if err != nil {
			built.Close(context.Background()) //nolint:errcheck // the start's error is the one to report
		}
	}()
	d = built
	if d.logger == nil {
		if d.logger, d.closeLog, err = newLogger(cfg, o.Stdout); err != nil {
			d.closeLog = func() {}
			return nil, err
		}
	}
	for _, w := range cfg.Warnings {
		d.logger.Warn("config", "warning", w)
	}
	exposure := securityWarnings(cfg)
	for _, w := range exposure {
		d.logger.Warn("security", "warning", w)
	}
	if f := cfg.Basic.RestTLS; f.Certfile != "" {
		r, err := certs.NewReloader(f.Certfile, f.Keyfile, d.logger)
		if err != nil {
			return nil, fmt.Errorf("basic.restTls: %w", err)
		}
		d.restTLS = r.Config()
	}
	defaults := rule.OptionsFromConfig(cfg.Rule)
	if err := defaults.Validate(); err != nil {
		return nil, fmt.Errorf("config rule section: %w", err)
	}
	if d.store == nil {
		if d.store, err = openCatalog(ctx, cfg, d.logger); err != nil {
			return nil, err
		}
	}
	nodeID, err := cluster.LoadNodeID(cfg.Paths.Data)
	if err != nil {
		return nil, err
	}
	if d.catalog, err = catalog.New(ctx, d.store); err != nil {
		return nil, err
	}
	logInvalidNames(d.catalog, d.logger)
	d.members = newMembership(cfg, d.store, nodeID, o.Version, d.logger)
	// The placer is built after the engine (it places the engine's
	// tasks); the checkpoints the engine writes ask it for their lease
	// only once rules run, after New.
	lease := func(id string) (string, int64, error) { return d.placer.Lease(id) }
	role := newClusterRole(d.store, cfg, nodeID, lease, d.logger)
	d.pool = newConnectionPool(cfg, d.logger)
	if d.parts, err = newEngineParts(cfg, d.catalog, d.logger, nodeID, o.Extend, role, d.pool); err != nil {
		return nil, fmt.Errorf("start engine: %w", err)
	}
	d.tasks = newTasks(d.store, d.catalog, d.parts.engine, nodeID, defaults, d.logger)
	d.placer = newPlacer(cfg, d.store, d.catalog, d.members, d.tasks, d.logger)
	d.rules = rulemgr.New(rulemgr.Config{
		Catalog:   d.catalog,
		Runner:    d.parts.engine,
		Logger:    d.logger,
		Defaults:  defaults,
		Crashed:   o.crashed,
		Cleanup:   d.cleanupRule,
		NodeID:    nodeID,
		Placement: placement(d.placer, d.tasks),
	})
	d.history = metrics.NewHistory(metrics.HistoryConfig{Rules: d.rules})
	d.api = server.New(server.Options{
		Catalog: d.catalog, Rules: d.rules, Config: cfg, Environ: cfg.Environ, Logger: d.logger,
		Version: o.Version, Commit: o.Commit,
		Connections: d.parts.connections, Connectors: d.parts.connectors, Functions: d.parts.functions,
		Memory: d.parts.memory, Streams: d.parts.engine, Taps: d.parts.taps, Tracing: d.parts.tracing,
		History: d.history, Warnings: exposure, JSLimits: jsudf.LimitsFromConfig(cfg), Cluster: d.members,
	})
	return d, nil
}

// cleanupRule removes what a deleted rule left: its tasks on this node,
// its checkpoints in the shared database, its folders in the data folder.
func (d *Daemon) cleanupRule(ctx context.Context, id string) error {
	if d.tasks != nil {
		d.tasks.StopRule(ctx, id)
	}
	dropSharedCheckpoints(ctx, d.store, d.catalog, id, d.logger)
	return errors.Join(removeRuleData(d.cfg.Paths.Data, id), removeTaskData(d.cfg.Paths.Data, id))
}

// Close stops the rules (draining them within ctx), then releases the
// engine, the REST API's test runs and the catalog, and closes the log.
// It may be called more than once, and after a failed New.
func (d *Daemon) Close(ctx context.Context) error {
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	if d.rules != nil {
		if err := d.rules.Close(ctx); err != nil && !errors.Is(err, rulemgr.ErrClosed) {
			errs = append(errs, fmt.Errorf("stop rules: %w", err))
		}
	}
	if d.tasks != nil {
		d.tasks.Close(ctx)
	}
	if d.api != nil {
		d.api.Close()
	}
	if d.parts != nil {
		d.parts.close(d.logger)
	}
	if d.store != nil {
		if err := d.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close catalog: %w", err))
		}
	}
	d.closeLog()
	return errors.Join(errs...)
}

// Config is the configuration the daemon was built from.
func (d *Daemon) Config() *config.Config { return d.cfg }

// Logger is the daemon's logger.
func (d *Daemon) Logger() *slog.Logger { return d.logger }

// Catalog holds the streams, tables, rules and connections.
func (d *Daemon) Catalog() *catalog.Catalog { return d.catalog }

// Rules is the rule manager: every rule's lifecycle.
func (d *Daemon) Rules() *rulemgr.Manager { return d.rules }

// Engine builds and starts the rules the rule manager runs.
func (d *Daemon) Engine() *engine.Engine { return d.parts.engine }

// Connectors is the registry of the connector types rules may use.
func (d *Daemon) Connectors() *connector.Registry { return d.parts.connectors }

// Functions is the registry of the functions rules may call.
func (d *Daemon) Functions() *function.Registry { return d.parts.functions }

// Connections reports the connections the rules' connectors hold.
func (d *Daemon) Connections() *connection.Registry { return d.parts.connections }

// Memory is the bus memory streams read and memory sinks write.
func (d *Daemon) Memory() *membus.Bus { return d.parts.memory }

// Taps carries the running rules' emissions to GET /rules/{id}/tap.
func (d *Daemon) Taps() *tap.Hub { return d.parts.taps }

// Tracing is the rules' data tracing.
func (d *Daemon) Tracing() *tracing.Service { return d.parts.tracing }

// Cluster describes this node and, on a shared catalog, its members.
func (d *Daemon) Cluster() *cluster.Membership { return d.members }

// History keeps the sampled metrics; Serve samples it, a test that only
// uses Handler samples it itself.
func (d *Daemon) History() *metrics.History { return d.history }

// Handler is the REST API, without the listeners Serve adds (/metrics,
// pprof): for tests that serve it with httptest.
func (d *Daemon) Handler() http.Handler { return d.api }

// logInvalidNames logs every catalog row whose name the name validator
// refuses (written by an older version or by hand). Such rows stay loaded,
// so they can be seen and deleted; every path built from their names is
// encoded (guard.PathElem) and stays in its folder.
func logInvalidNames(cat *catalog.Catalog, logger *slog.Logger) {
	for _, st := range cat.Streams("") {
		if err := guard.Name(string(st.Kind), st.Name); err != nil {
			logger.Error("catalog holds an invalid name", "err", err)
		}
	}
	for _, r := range cat.Rules() {
		if err := guard.Name("rule id", r.ID); err != nil {
			logger.Error("catalog holds an invalid name", "err", err)
		}
	}
	for _, c := range cat.Connections() {
		if err := guard.Name("connection", c.ID); err != nil {
			logger.Error("catalog holds an invalid name", "err", err)
		}
	}
	for _, cc := range []catalog.ConfCategory{catalog.ConfSource, catalog.ConfSink, catalog.ConfConnection} {
		for _, k := range cat.ConfKeys(cc, "") {
			if err := errors.Join(guard.Name("confKey type", k.Type), guard.Name("confKey", k.Key)); err != nil {
				logger.Error("catalog holds an invalid name", "err", err)
			}
		}
	}
}

// securityWarnings lists what exposes the daemon: listeners anyone on the
// network can use without credentials, and authentication that no token
// can pass because etc/mgmt holds no public key.
func securityWarnings(cfg *config.Config) []string {
	warns := cfg.ExposureWarnings()
	if !cfg.Basic.Authentication {
		return warns
	}
	dir := filepath.Join(cfg.Paths.Etc, auth.KeyDir)
	keys, _ := filepath.Glob(filepath.Join(dir, "*.pub"))
	if len(keys) == 0 {
		warns = append(warns, fmt.Sprintf("basic.authentication is on but %s holds no public key (*.pub): every request but / and /ping is refused", dir))
	}
	return warns
}

// removeRuleData removes data/rule_<id> (the rule's checkpoints and state)
// and data/cache/<id> (its sink caches).
func removeRuleData(dataDir, id string) error {
	if dataDir == "" {
		return nil
	}
	if err := os.RemoveAll(filepath.Join(dataDir, "rule_"+guard.PathElem(id))); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(dataDir, "cache", guard.PathElem(id)))
}
