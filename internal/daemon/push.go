package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/certs"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/netlimit"
)

// pushServer is the shared server of the push endpoints (httppush,
// websocket server) on source.httpServerIp:httpServerPort, over TLS when
// source.httpServerTls is set. It is the HTTPMux the push sources register
// with, and it listens only once the first endpoint is registered: a daemon
// whose streams push nothing opens no port for them. A listen failure is
// returned to the registering source, and the next registration tries
// again. Close stops it.
type pushServer struct {
	*connector.Mux
	addr string
	tls  *tls.Config
	log  *slog.Logger
	cfg  *config.Config
	pool *netlimit.Pool

	mu     sync.Mutex
	srv    *http.Server
	closed bool
}

var _ connector.HTTPMux = (*pushServer)(nil)

// newPushServer checks the TLS files now, so a bad pair stops the daemon
// at start rather than the first push stream.
func newPushServer(cfg *config.Config, pool *netlimit.Pool, logger *slog.Logger) (*pushServer, error) {
	p := &pushServer{
		Mux:  connector.NewMux(),
		addr: net.JoinHostPort(cfg.Source.HTTPServerIP, strconv.Itoa(cfg.Source.HTTPServerPort)),
		log:  logger,
		cfg:  cfg,
		pool: pool,
	}
	if f := cfg.Source.HTTPServerTLS; f.Certfile != "" {
		r, err := certs.NewReloader(f.Certfile, f.Keyfile, logger)
		if err != nil {
			return nil, fmt.Errorf("source.httpServerTls: %w", err)
		}
		p.tls = r.Config()
	}
	return p, nil
}

// Handle starts the listener if needed, then serves h at pattern.
func (p *pushServer) Handle(pattern string, h http.Handler) error {
	if err := p.start(); err != nil {
		return err
	}
	return p.Mux.Handle(pattern, h)
}

func (p *pushServer) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("push endpoint server closed")
	}
	if p.srv != nil {
		return nil
	}
	ln, err := listen(p.pool, p.addr, "push endpoint server", p.tls != nil)
	if err != nil {
		return fmt.Errorf("push endpoint server: listen on %s: %w", p.addr, err)
	}
	srv := httpServer(p.cfg, p.pool, p.Mux, p.log)
	srv.TLSConfig = p.tls
	go func() {
		var err error
		if p.tls != nil {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Error("push endpoint server failed", "err", err)
		}
	}()
	p.srv = srv
	p.log.Info("push endpoint server listening", "addr", ln.Addr().String(), "tls", p.tls != nil)
	return nil
}

// Close stops the listener, if it was started, letting requests in flight
// finish for up to five seconds.
func (p *pushServer) Close() {
	p.mu.Lock()
	srv := p.srv
	p.closed = true
	p.mu.Unlock()
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx) //nolint:errcheck // best effort at exit
}
