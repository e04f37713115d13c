package daemon

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/metrics"
	"github.com/rekuiper/rekuiper/internal/netlimit"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
)

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
func servePrometheus(cfg *config.Config, mgr *rulemgr.Manager, limits prometheus.Collector, pool *netlimit.Pool, logger *slog.Logger) (func(), http.Handler, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		metrics.NewCollector(mgr),
		limits,
	)
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	if cfg.Basic.PrometheusPort == cfg.Basic.RestPort {
		return func() {}, h, nil
	}
	addr := net.JoinHostPort(cfg.Basic.RestIP, strconv.Itoa(cfg.Basic.PrometheusPort))
	ln, err := listen(pool, addr, "prometheus", true)
	if err != nil {
		return nil, nil, fmt.Errorf("prometheus: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := httpServer(cfg, pool, mux, logger)
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

// serveObservability mounts /metrics and pprof on the REST API, or serves
// them on ports of their own, as configured; the returned func stops what
// it started. /metrics and pprof on the REST port sit behind the API's
// checks (authentication, origin), as in eKuiper.
func (d *Daemon) serveObservability() (func(), error) {
	cfg, logger := d.cfg, d.logger
	var stops []func()
	stop := func() {
		for _, f := range slices.Backward(stops) {
			f()
		}
	}
	if cfg.Basic.Prometheus {
		stopMetrics, h, err := servePrometheus(cfg, d.rules, newLimitCollector(d.pool, d.api.EventStreams), d.pool, logger)
		if err != nil {
			return nil, err
		}
		stops = append(stops, stopMetrics)
		if h != nil {
			d.api.Mount("/metrics", h)
		}
	}
	if cfg.Basic.Pprof {
		if cfg.Basic.PprofIP == cfg.Basic.RestIP && cfg.Basic.PprofPort == cfg.Basic.RestPort {
			d.api.Mount("/debug/pprof/", pprofHandler())
		} else if stopPprof, err := servePprof(cfg); err != nil {
			// A debugging aid must not keep the daemon from starting
			// (another kuiperd may hold the port).
			logger.Warn("pprof disabled", "err", err)
		} else {
			logger.Info("pprof listening", "addr", net.JoinHostPort(cfg.Basic.PprofIP, strconv.Itoa(cfg.Basic.PprofPort)))
			stops = append(stops, stopPprof)
		}
	}
	return stop, nil
}

// newHTTPErrorLog sends the HTTP servers' own errors (TLS handshakes,
// malformed requests) to the daemon's log as warnings.
func newHTTPErrorLog(logger *slog.Logger) *log.Logger {
	return slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
}
