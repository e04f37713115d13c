// Package broker runs an embedded MQTT broker (mochi-mqtt) for tests,
// demos and benchmarks: MQTT 3.1.1 and 5, QoS 0/1/2, retained messages and
// shared subscriptions, anonymous access, in-memory state only.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
)

// DefaultAddr is the listen address used when Start gets an empty one:
// loopback with an ephemeral port.
const DefaultAddr = "127.0.0.1:0"

// Broker is a running embedded broker. Its serving goroutines belong to
// the mochi server and stop at Close.
type Broker struct {
	srv       *mqtt.Server
	ln        *guardedListener
	addr      string
	closeOnce sync.Once
	closeErr  error
}

// Start listens on addr (DefaultAddr when empty) and serves until Close or
// until ctx is done. The listener is bound when Start returns.
func Start(ctx context.Context, addr string) (*Broker, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	srv := mqtt.New(&mqtt.Options{Logger: slog.New(slog.DiscardHandler), InlineClient: false})
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("add auth hook: %w", err)
	}
	gl := newGuardedListener("tcp", ln, srv)
	if err := srv.AddListener(gl); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("add listener: %w", err)
	}
	if err := srv.Serve(); err != nil {
		_ = srv.Close()
		return nil, fmt.Errorf("serve: %w", err)
	}
	b := &Broker{srv: srv, ln: gl, addr: ln.Addr().String()}
	if ctx != nil && ctx.Done() != nil {
		context.AfterFunc(ctx, func() { _ = b.Close() })
	}
	return b, nil
}

// Addr is the host:port the broker listens on.
func (b *Broker) Addr() string { return b.addr }

// URL is the broker's tcp:// URL.
func (b *Broker) URL() string { return "tcp://" + b.addr }

// Close stops the broker and disconnects every client. It is idempotent.
func (b *Broker) Close() error {
	if b == nil || b.srv == nil {
		return errors.New("broker not started")
	}
	b.closeOnce.Do(func() { b.closeErr = b.srv.Close() })
	return b.closeErr
}
