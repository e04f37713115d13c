// Package mqtt provides the mqtt source and sink for MQTT 3.1 and 3.1.1 (a
// lean client of its own, wire.go) and 5 (paho.golang), with TLS and mTLS,
// persistent sessions, shared subscriptions and connection sharing through
// a Pool.
//
// Ownership: the Pool owns one goroutine per broker connection, which
// connects, reconnects with exponential backoff and jitter on the Pool's
// clock, and resubscribes. Sources and sinks hold references; the last
// release stops the connection. The daemon creates the Pool with NewPool,
// passes it to Register and closes it at shutdown.
package mqtt

import (
	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
)

// Register adds the mqtt source and sink to r; both use pool.
func Register(r *connector.Registry, pool *Pool) error {
	if err := r.RegisterSource(Type, SourceSpec(), func(props map[string]any, deps connector.Deps) (api.Source, error) {
		return NewSource(pool, props, deps)
	}); err != nil {
		return err
	}
	return r.RegisterSink(Type, SinkSpec(), func(props map[string]any, deps connector.Deps) (api.Sink, error) {
		return NewSink(pool, props, deps)
	})
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
