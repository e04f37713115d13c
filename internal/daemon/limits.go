package daemon

import (
	"log/slog"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/netlimit"
)

// newConnectionPool raises the open-files limit to its hard limit and
// returns the connection budget every server of the daemon shares
// (limits.maxConnections, kept below the descriptor limit by
// limits.fileDescriptorReserve, and limits.maxConnectionsPerAddress).
func newConnectionPool(cfg *config.Config, logger *slog.Logger) *netlimit.Pool {
	nofile, err := netlimit.RaiseFileLimit()
	if err != nil {
		logger.Warn("read the open files limit", "err", err)
		nofile = 1024
	}
	lim := netlimit.Limits{
		MaxConnections: cfg.Limits.ConnectionBudget(nofile),
		MaxPerAddress:  cfg.Limits.MaxConnectionsPerAddress,
	}
	logger.Info("connection limits", "open_files", nofile, "max_connections", lim.MaxConnections, "per_address", lim.MaxPerAddress)
	return netlimit.NewPool(lim)
}

// httpServer is an HTTP server of the daemon with the timeouts of the
// limits section and its connections counted by pool; serve it on
// pool.Listen(...).
func httpServer(cfg *config.Config, pool *netlimit.Pool, h http.Handler, logger *slog.Logger) *http.Server {
	lim := cfg.Limits
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: lim.ReadHeaderTimeout.Std(),
		ReadTimeout:       lim.ReadTimeout.Std(),
		IdleTimeout:       lim.IdleTimeout.Std(),
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          newHTTPErrorLog(logger),
		ConnState:         pool.ConnState,
	}
}

// listen listens on addr with its connections counted by pool.
func listen(pool *netlimit.Pool, addr, name string, tls bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return pool.Listen(ln, name, !tls), nil
}

// limitCollector exports the connection and event-stream figures.
type limitCollector struct {
	pool    *netlimit.Pool
	streams func() (open int, refused int64)

	max, open, idle, accepted, evicted, refused, streamsOpen, streamsRefused *prometheus.Desc
}

func newLimitCollector(pool *netlimit.Pool, streams func() (int, int64)) *limitCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &limitCollector{
		pool: pool, streams: streams,
		max:            d("rekuiper_connections_max", "The connection budget: limits.maxConnections, kept below the open-files limit by limits.fileDescriptorReserve."),
		open:           d("rekuiper_connections_open", "Open client connections of the REST, push and Prometheus servers."),
		idle:           d("rekuiper_connections_idle", "Open client connections carrying no request."),
		accepted:       d("rekuiper_connections_accepted_total", "Client connections accepted."),
		evicted:        d("rekuiper_connections_evicted_total", "Idle client connections closed to make room for a new one (limits.maxConnections, limits.maxConnectionsPerAddress)."),
		refused:        d("rekuiper_connections_refused_total", "Client connections refused because every connection was busy."),
		streamsOpen:    d("rekuiper_event_streams_open", "Open event-stream answers (taps, rule test results, memory events)."),
		streamsRefused: d("rekuiper_event_streams_refused_total", "Event-stream requests refused by limits.maxEventStreams or limits.maxEventStreamsPerRule."),
	}
}

func (c *limitCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.max, c.open, c.idle, c.accepted, c.evicted, c.refused, c.streamsOpen, c.streamsRefused} {
		ch <- d
	}
}

func (c *limitCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stats()
	open, refused := c.streams()
	ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(c.pool.Limits().MaxConnections))
	ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(s.Open))
	ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(s.Idle))
	ch <- prometheus.MustNewConstMetric(c.accepted, prometheus.CounterValue, float64(s.Accepted))
	ch <- prometheus.MustNewConstMetric(c.evicted, prometheus.CounterValue, float64(s.Evicted))
	ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(s.Refused))
	ch <- prometheus.MustNewConstMetric(c.streamsOpen, prometheus.GaugeValue, float64(open))
	ch <- prometheus.MustNewConstMetric(c.streamsRefused, prometheus.CounterValue, float64(refused))
}
