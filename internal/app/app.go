// Package app runs kuiperd: configuration, logging, the catalog, the rule
// manager and the REST server, with graceful shutdown.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rekuiper/rekuiper/internal/auth"
	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/certs"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/cluster"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/connector/membus"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/jsudf"
	"github.com/rekuiper/rekuiper/internal/metrics"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/server"
	"github.com/rekuiper/rekuiper/internal/tap"
	"github.com/rekuiper/rekuiper/internal/tracing"
	"github.com/rekuiper/rekuiper/internal/version"
)

// RunnerFactory builds the engine's rule runner; the returned func releases
// it after the last rule stopped.
type RunnerFactory func(cfg *config.Config, cat *catalog.Catalog, logger *slog.Logger) (rulemgr.Runner, func(), error)

// Options are the daemon's command-line inputs.
type Options struct {
	// BaseDir, EtcDir, DataDir, LogDir: see config.LoadOptions.
	BaseDir, EtcDir, DataDir, LogDir string
	// Environ is the process environment (os.Environ()).
	Environ []string
	// Stdout receives the listening banner and the console log.
	Stdout io.Writer
	// NewRunner builds the rule runner. Required.
	NewRunner RunnerFactory
	// Version and Commit are reported in the banner and by GET /; an empty
	// Version means the binary's own (package version).
	Version, Commit string
	// Ready, when set, is called with the REST address once it accepts
	// connections.
	Ready func(addr string)
}

// Run starts the daemon and blocks until ctx is cancelled, then shuts down
// within basic.gracefulShutdownTimeout: the REST server stops accepting,
// rules drain and stop (wanted states unchanged), the catalog closes.
func Run(ctx context.Context, opts Options) (err error) {
	if opts.Stdout == nil {
		opts.Stdout = io.Discard
	}
	if opts.NewRunner == nil {
		return errNoRunner
	}
	if opts.Version == "" {
		v := version.Get()
		opts.Version, opts.Commit = v.Version, v.Commit
	}
	cfg, err := config.Load(config.LoadOptions{
		BaseDir: opts.BaseDir, EtcDir: opts.EtcDir, DataDir: opts.DataDir, LogDir: opts.LogDir, Environ: opts.Environ,
	})
	if err != nil {
		return err
	}
	logger, closeLog, err := newLogger(cfg, opts.Stdout)
	if err != nil {
		return err
	}
	defer closeLog()
	for _, w := range cfg.Warnings {
		logger.Warn("config", "warning", w)
	}
	applyMemoryLimit(cfg.Basic.MemoryLimitBytes, opts.Environ, logger)
	exposure := securityWarnings(cfg)
	for _, w := range exposure {
		logger.Warn("security", "warning", w)
	}
	var restTLS *tls.Config
	if f := cfg.Basic.RestTLS; f.Certfile != "" {
		r, err := certs.NewReloader(f.Certfile, f.Keyfile, logger)
		if err != nil {
			return fmt.Errorf("basic.restTls: %w", err)
		}
		restTLS = r.Config()
	}

	store, err := openCatalog(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := store.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close catalog: %w", cerr)
		}
	}()
	nodeID, err := cluster.LoadNodeID(cfg.Paths.Data)
	if err != nil {
		return err
	}
	defaults := rule.OptionsFromConfig(cfg.Rule)
	if err := defaults.Validate(); err != nil {
		return fmt.Errorf("config rule section: %w", err)
	}
	crashed, err := previousCrash(cfg.Paths.Data)
	if err != nil {
		return err
	}
	if crashed != "" {
		logger.Error("the previous kuiperd crashed; its report is in crash.prev.log", "crash", crashed)
	}
	stopRecording, err := recordCrashes(cfg.Paths.Data)
	if err != nil {
		return err
	}
	defer stopRecording()
	cat, err := catalog.New(ctx, store)
	if err != nil {
		return err
	}
	logInvalidNames(cat, logger)
	members := newMembership(cfg, store, nodeID, opts.Version, logger)
	runner, releaseRunner, err := opts.NewRunner(cfg, cat, logger)
	if err != nil {
		return fmt.Errorf("start engine: %w", err)
	}
	if releaseRunner != nil {
		defer releaseRunner()
	}
	tasks := newTasks(store, cat, runner, nodeID, defaults, logger)
	placer := newPlacer(cfg, store, cat, members, tasks, logger)
	mgr := rulemgr.New(rulemgr.Config{
		Catalog:  cat,
		Runner:   runner,
		Logger:   logger,
		Defaults: defaults,
		Crashed:  crashed,
		Cleanup: func(ctx context.Context, id string) error {
			if tasks != nil {
				tasks.StopRule(ctx, id)
			}
			dropSharedCheckpoints(ctx, store, cat, id, logger)
			return errors.Join(removeRuleData(cfg.Paths.Data, id), removeTaskData(cfg.Paths.Data, id))
		},
		NodeID:    nodeID,
		Placement: placement(placer, tasks),
	})
	shareCheckpoints(runner, store, placer, cfg, logger)
	stopCluster := runCluster(ctx, cat, members, mgr, placer, tasks, logger)
	defer stopCluster()
	var conns *connection.Registry
	if r, ok := runner.(interface{ Connections() *connection.Registry }); ok {
		conns = r.Connections()
	}
	var checker server.StreamChecker
	if c, ok := runner.(server.StreamChecker); ok {
		checker = c
	}
	sopts := server.Options{
		Catalog: cat, Rules: mgr, Config: cfg, Environ: opts.Environ, Logger: logger, Version: opts.Version, Commit: opts.Commit,
		Connections: conns, Streams: checker, Warnings: exposure,
		JSLimits: jsudf.LimitsFromConfig(cfg), Cluster: members,
	}
	if r, ok := runner.(interface{ ConnectorRegistry() *connector.Registry }); ok {
		sopts.Connectors = r.ConnectorRegistry()
	}
	if r, ok := runner.(interface{ FunctionRegistry() *function.Registry }); ok {
		sopts.Functions = r.FunctionRegistry()
	}
	if r, ok := runner.(interface{ MemoryBus() *membus.Bus }); ok {
		sopts.Memory = r.MemoryBus()
	}
	if r, ok := runner.(interface{ TapHub() *tap.Hub }); ok {
		sopts.Taps = r.TapHub()
	}
	history := metrics.NewHistory(metrics.HistoryConfig{Rules: mgr})
	history.Start()
	defer history.Stop()
	sopts.History = history
	if r, ok := runner.(interface{ TraceService() *tracing.Service }); ok {
		sopts.Tracing = r.TraceService()
	}
	api := server.New(sopts)
	defer api.Close() // ends the rule test runs

	// /metrics and pprof on the REST port sit behind the API's checks
	// (authentication, origin), as in eKuiper.
	var handler http.Handler = api
	if cfg.Basic.Prometheus {
		stopMetrics, h, err := servePrometheus(cfg, mgr, logger)
		if err != nil {
			return err
		}
		defer stopMetrics()
		if h != nil {
			api.Mount("/metrics", h)
		}
	}

	if cfg.Basic.Pprof {
		if cfg.Basic.PprofIP == cfg.Basic.RestIP && cfg.Basic.PprofPort == cfg.Basic.RestPort {
			api.Mount("/debug/pprof/", pprofHandler())
		} else if stopPprof, err := servePprof(cfg); err != nil {
			// A debugging aid must not keep the daemon from starting
			// (another kuiperd may hold the port).
			logger.Warn("pprof disabled", "err", err)
		} else {
			logger.Info("pprof listening", "addr", net.JoinHostPort(cfg.Basic.PprofIP, strconv.Itoa(cfg.Basic.PprofPort)))
			defer stopPprof()
		}
	}

	addr := net.JoinHostPort(cfg.Basic.RestIP, strconv.Itoa(cfg.Basic.RestPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 30 * time.Second,
		ReadTimeout:       5 * time.Minute,
		WriteTimeout:      5 * time.Minute,
		IdleTimeout:       60 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		TLSConfig:         restTLS,
	}
	// Shutdown waits for open requests: end the rule test event streams.
	srv.RegisterOnShutdown(api.Close)
	serveErr := make(chan error, 1)
	scheme := "http"
	if restTLS != nil {
		scheme = "https"
		go func() { serveErr <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { serveErr <- srv.Serve(ln) }()
	}

	if err := mgr.Load(ctx); err != nil {
		srv.Close()
		return err
	}
	stopPlacer := runPlacer(ctx, placer, placed(mgr, tasks))
	defer stopPlacer()
	url := scheme + "://" + ln.Addr().String()
	fmt.Fprintf(opts.Stdout, "Serving kuiper (version - %s), restful api on %s\n", opts.Version, url)
	logger.Info("rest api listening", "addr", url, "catalog", catalogName(cfg), "node", nodeID)
	if opts.Ready != nil {
		opts.Ready(ln.Addr().String())
	}

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		logger.Error("rest server failed", "err", err)
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Basic.GracefulShutdownTimeout.Std())
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("rest server shutdown", "err", err)
	}
	if err := mgr.Close(sctx); err != nil {
		logger.Warn("stop rules", "err", err)
	}
	if tasks != nil {
		tasks.Close(sctx)
	}
	stopPlacer() // the rules stopped: give their leases up
	logger.Info("stopped")
	return nil
}

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

func newLogger(cfg *config.Config, stdout io.Writer) (*slog.Logger, func(), error) {
	level := slog.LevelInfo
	switch strings.ToLower(cfg.Basic.LogLevel) {
	case "debug", "trace":
		level = slog.LevelDebug
	case "warn", "warning":
		level = slog.LevelWarn
	case "error", "fatal", "panic":
		level = slog.LevelError
	}
	if cfg.Basic.Debug {
		level = slog.LevelDebug
	}
	var writers []io.Writer
	closeFn := func() {}
	if cfg.Basic.ConsoleLog {
		writers = append(writers, stdout)
	}
	if cfg.Basic.FileLog {
		rot, err := newRotator(filepath.Join(cfg.Paths.Log, "stream.log"), cfg.Basic.RotateSize, cfg.Basic.RotateCount)
		if err != nil {
			return nil, nil, err
		}
		rot.rotateEvery(time.Duration(cfg.Basic.RotateTime)*time.Hour, clock.Wall{})
		writers = append(writers, rot)
		closeFn = func() { rot.Close() } //nolint:errcheck // at exit
	}
	var sys slog.Handler
	if cfg.Basic.Syslog.Enable {
		h, closeSys, err := newSyslogHandler(cfg.Basic.Syslog)
		if err != nil {
			closeFn()
			return nil, nil, err
		}
		sys = h
		closeFile := closeFn
		closeFn = func() { closeFile(); closeSys() }
		if len(writers) == 0 {
			return slog.New(sys), closeFn, nil
		}
	}
	if len(writers) == 0 {
		return slog.New(slog.DiscardHandler), closeFn, nil
	}
	noTime := cfg.Basic.LogDisableTimestamp
	hopts := &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if noTime && len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return maskAttr(a)
	}}
	var h slog.Handler = slog.NewTextHandler(io.MultiWriter(writers...), hopts)
	if sys != nil {
		h = slog.NewMultiHandler(h, sys)
	}
	return slog.New(h), closeFn, nil
}

// maskAttr masks the secrets a log value may carry (URL passwords,
// credential headers and parameters, secret properties; see
// rule.MaskText), whatever logged it.
func maskAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if m := rule.MaskText(v.String()); m != v.String() {
			a.Value = slog.StringValue(m)
		}
	case slog.KindAny:
		var s string
		switch x := v.Any().(type) {
		case error:
			s = x.Error()
		case map[string]any:
			s = fmt.Sprint(rule.MaskProps(x))
			a.Value = slog.StringValue(s)
			return a
		default:
			s = fmt.Sprint(x)
		}
		if m := rule.MaskText(s); m != s {
			a.Value = slog.StringValue(m)
		}
	}
	return a
}

var errNoRunner = errors.New("no runner factory")

// servePprof serves Go's profiler (net/http/pprof) on basic.pprofIp and
// basic.pprofPort (eKuiper's default: on, 127.0.0.1:6060).
func servePprof(cfg *config.Config) (func(), error) {
	addr := net.JoinHostPort(cfg.Basic.PprofIP, strconv.Itoa(cfg.Basic.PprofPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: pprofHandler(), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() { srv.Close() }, nil
}

func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// servePrometheus exposes rule metrics at /metrics: on the REST port when
// basic.prometheusPort equals basic.restPort (the handler is returned for
// the caller to mount), else on a server of its own.
func servePrometheus(cfg *config.Config, mgr *rulemgr.Manager, logger *slog.Logger) (func(), http.Handler, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		metrics.NewCollector(mgr),
	)
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	if cfg.Basic.PrometheusPort == cfg.Basic.RestPort {
		return func() {}, h, nil
	}
	addr := net.JoinHostPort(cfg.Basic.RestIP, strconv.Itoa(cfg.Basic.PrometheusPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("prometheus: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("prometheus server failed", "err", err)
		}
	}()
	logger.Info("prometheus metrics listening", "addr", ln.Addr().String())
	return func() { srv.Close() }, nil, nil
}

// applyMemoryLimit sets the Go runtime's soft memory limit from
// basic.memoryLimit, unless GOMEMLIMIT is set in environ (the runtime has
// read it already, and the environment wins).
func applyMemoryLimit(limit int64, environ []string, logger *slog.Logger) {
	if limit <= 0 {
		return
	}
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "GOMEMLIMIT="); ok && v != "" {
			logger.Info("basic.memoryLimit not applied: GOMEMLIMIT is set", "GOMEMLIMIT", v)
			return
		}
	}
	debug.SetMemoryLimit(limit)
	logger.Info("soft memory limit set", "bytes", limit)
}
