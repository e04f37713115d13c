package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/rekuiper/rekuiper/internal/config"
)

// RunOptions are the daemon's command-line inputs.
type RunOptions struct {
	// BaseDir, EtcDir, DataDir, LogDir: see config.LoadOptions.
	BaseDir, EtcDir, DataDir, LogDir string
	// Environ is the process environment (os.Environ()).
	Environ []string
	// Stdout receives the listening banner and the console log.
	Stdout io.Writer
	// Version and Commit are reported in the banner and by GET /; an
	// empty Version means the binary's own (package version).
	Version, Commit string
	// Extend registers extensions after the built-ins (the SDK's).
	Extend Extend
	// Ready, when set, is called with the REST address once it accepts
	// connections.
	Ready func(addr string)
}

// Run is the whole daemon process: it loads the configuration, applies
// the memory limit, reports the previous process's crash and records the
// next one's, builds the daemon (New) and serves until ctx is cancelled,
// then shuts down within basic.gracefulShutdownTimeout: the REST server
// stops accepting, rules drain and stop (wanted states unchanged), the
// catalog closes.
func Run(ctx context.Context, o RunOptions) (err error) {
	cfg, err := config.Load(config.LoadOptions{
		BaseDir: o.BaseDir, EtcDir: o.EtcDir, DataDir: o.DataDir, LogDir: o.LogDir, Environ: o.Environ,
	})
	if err != nil {
		return err
	}
	crashed, err := previousCrash(cfg.Paths.Data)
	if err != nil {
		return err
	}
	stopRecording, err := recordCrashes(cfg.Paths.Data)
	if err != nil {
		return err
	}
	defer stopRecording()
	d, err := New(ctx, cfg, Options{
		Stdout: o.Stdout, Version: o.Version, Commit: o.Commit, Extend: o.Extend, Ready: o.Ready, crashed: crashed,
	})
	if err != nil {
		return err
	}
	if crashed != "" {
		d.logger.Error("the previous kuiperd crashed; its report is in crash.prev.log", "crash", crashed)
	}
	applyMemoryLimit(cfg.Basic.MemoryLimitBytes, o.Environ, d.logger)
	serveErr := d.Serve(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Basic.GracefulShutdownTimeout.Std())
	defer cancel()
	if err := d.Close(sctx); err != nil {
		d.logger.Warn("shut down", "err", err)
	}
	return serveErr
}

// Serve serves the REST API (with /metrics and pprof as configured),
// starts the cluster's heartbeat and catalog follower, loads the rules
// and places them, and blocks until ctx is cancelled or the REST server
// fails; it then stops accepting, stops the rules within
// basic.gracefulShutdownTimeout and gives their leases up. Close releases
// the rest. Serve is called once.
func (d *Daemon) Serve(ctx context.Context) error {
	cfg, logger := d.cfg, d.logger
	stopObserving, err := d.serveObservability()
	if err != nil {
		return err
	}
	defer stopObserving()
	d.history.Start()
	defer d.history.Stop()
	stopCluster := runCluster(ctx, d.catalog, d.members, d.rules, d.placer, d.tasks, logger)
	defer stopCluster()

	addr := net.JoinHostPort(cfg.Basic.RestIP, strconv.Itoa(cfg.Basic.RestPort))
	ln, err := listen(d.pool, addr, "rest api", d.restTLS != nil)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := d.restServer()
	serveErr := make(chan error, 1)
	scheme := "http"
	if d.restTLS != nil {
		scheme = "https"
		go func() { serveErr <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { serveErr <- srv.Serve(ln) }()
	}

	if err := d.rules.Load(ctx); err != nil {
		srv.Close()
		return err
	}
	stopPlacer := runPlacer(ctx, d.placer, placed(d.rules, d.tasks))
	defer stopPlacer()
	url := scheme + "://" + ln.Addr().String()
	fmt.Fprintf(d.opts.Stdout, "Serving kuiper (version - %s), restful api on %s\n", d.opts.Version, url)
	logger.Info("rest api listening", "addr", url, "catalog", catalogName(cfg), "node", d.members.ID())
	if d.opts.Ready != nil {
		d.opts.Ready(ln.Addr().String())
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
	if err := d.rules.Close(sctx); err != nil && !errors.Is(err, context.Canceled) {
		logger.Warn("stop rules", "err", err)
	}
	if d.tasks != nil {
		d.tasks.Close(sctx)
	}
	stopPlacer() // the rules stopped: give their leases up
	logger.Info("stopped")
	return nil
}

// restServer is the REST API's HTTP server, with its timeouts.
func (d *Daemon) restServer() *http.Server {
	srv := httpServer(d.cfg, d.pool, d.api, d.logger)
	srv.WriteTimeout = 5 * time.Minute // event streams lift it
	srv.TLSConfig = d.restTLS
	// Shutdown waits for open requests: end the rule test event streams.
	srv.RegisterOnShutdown(d.api.Close)
	return srv
}
