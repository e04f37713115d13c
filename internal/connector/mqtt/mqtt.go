// Package mqtt provides the mqtt source and sink for MQTT 3.1 and 3.1.1 (a
// lean client of its own, wire.go) and 5 (paho.golang), with TLS and mTLS,
// persistent sessions, shared subscriptions and connection sharing through
// a Pool.
//
// Ownership: the Pool owns one goroutine per broker connection, which
// connects, reconnects with exponential backoff and jitter on the Pool's
// clock, and resubscribes. Sources and sinks hold references; the last
// release stops the connection. Register builds the registry's Pool from
// its Env; the registry's Close closes it.
package mqtt

import (
	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
)

// Register adds the mqtt source and sink to r, over one Pool of shared
// broker connections built from r's Env (reporting to its connection
// registry) and closed by r.Close, and the key of named MQTT connections.
func Register(r *connector.Registry) error {
	env := r.Env()
	pool := NewPool(env.Logger, env.Clock)
	if env.Connections != nil {
		pool.ReportTo(env.Connections)
	}
	r.OnClose(pool.Close)
	return register(r, pool)
}

// register adds the MQTT source and sink over pool, and the key of named
// MQTT connections, to r.
func register(r *connector.Registry, pool *Pool) error {
	if err := r.RegisterSource(Type, SourceSpec(), func(props map[string]any, deps connector.Deps) (api.Source, error) {
		return NewSource(pool, props, deps)
	}); err != nil {
		return err
	}
	if err := r.RegisterSink(Type, SinkSpec(), func(props map[string]any, deps connector.Deps) (api.Sink, error) {
		return NewSink(pool, props, deps)
	}); err != nil {
		return err
	}
	return r.RegisterConnectionKey(Type, ConnectionKey)
}

// isClosed reports whether ch is closed (ch is only ever closed, never
// sent on).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
