// Package certs serves TLS certificates from a certificate and key file
// pair and picks up new files without a restart: each handshake checks the
// files' modification times and sizes and re-reads them when they changed.
package certs

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Reloader holds the current certificate of one file pair. It is safe for
// concurrent use.
type Reloader struct {
	certfile, keyfile string
	log               *slog.Logger

	mu    sync.Mutex
	cert  *tls.Certificate
	stamp [2]fileStamp
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// NewReloader loads the pair. A missing, unreadable or mismatched file is
// an error naming it, so a daemon can refuse to start. Later reload
// failures are logged to logger (nil: discarded) and the previous
// certificate stays in use.
func NewReloader(certfile, keyfile string, logger *slog.Logger) (*Reloader, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{certfile: certfile, keyfile: keyfile, log: logger}
	stamp, err := r.stat()
	if err != nil {
		return nil, err
	}
	if err := r.load(stamp); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Reloader) stat() ([2]fileStamp, error) {
	var s [2]fileStamp
	for i, f := range []string{r.certfile, r.keyfile} {
		fi, err := os.Stat(f)
		if err != nil {
			return s, fmt.Errorf("tls: %w", err)
		}
		s[i] = fileStamp{fi.ModTime(), fi.Size()}
	}
	return s, nil
}

func (r *Reloader) load(stamp [2]fileStamp) error {
	c, err := tls.LoadX509KeyPair(r.certfile, r.keyfile)
	if err != nil {
		return fmt.Errorf("tls: load certificate %s and key %s: %w", r.certfile, r.keyfile, err)
	}
	r.mu.Lock()
	r.cert, r.stamp = &c, stamp
	r.mu.Unlock()
	return nil
}

// Certificate returns the current certificate, re-reading the files first
// when they changed since the last load.
func (r *Reloader) Certificate() *tls.Certificate {
	stamp, err := r.stat()
	r.mu.Lock()
	cur, changed := r.cert, err == nil && stamp != r.stamp
	r.mu.Unlock()
	if err != nil {
		r.log.Warn("tls certificate files unreadable, keeping the loaded certificate", "err", err)
		return cur
	}
	if changed {
		if err := r.load(stamp); err != nil {
			r.log.Warn("tls certificate reload failed, keeping the loaded certificate", "err", err)
			return cur
		}
		r.log.Info("tls certificate reloaded", "certfile", r.certfile)
		r.mu.Lock()
		cur = r.cert
		r.mu.Unlock()
	}
	return cur
}

// Config returns a server TLS configuration (TLS 1.2 or newer) serving the
// reloaded certificate.
func (r *Reloader) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return r.Certificate(), nil
		},
	}
}
