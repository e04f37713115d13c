package connector

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
)

// Env is what a registry gives the connector types registered on it, for
// what a type shares between all its sources and sinks (the MQTT client
// pool): built at registration, released by the registry's Close.
type Env struct {
	// Logger is the daemon's logger.
	Logger *slog.Logger
	// Clock paces what the shared clients do (reconnect backoff).
	Clock clock.Clock
	// Connections, when set, is told the status of the shared clients a
	// connector type keeps (GET /connections) and the connection-key
	// function of each type registered with RegisterConnectionKey.
	Connections *connection.Registry
}

// Env returns the registry's environment.
func (r *Registry) Env() Env { return r.env }

// OnClose adds f to what Close runs: the release of what a connector type
// built at registration. Close runs them in the reverse order of their
// registration.
func (r *Registry) OnClose(f func() error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closers = append(r.closers, f)
}

// Close releases what the connector types built at registration (their
// OnClose functions, last registered first) and returns their errors
// joined. Sources and sinks still holding a shared client see it closed.
// Calls after the first do nothing.
func (r *Registry) Close() error {
	r.mu.Lock()
	closers := r.closers
	r.closers = nil
	r.mu.Unlock()
	var errs []error
	for _, f := range slices.Backward(closers) {
		errs = append(errs, f())
	}
	return errors.Join(errs...)
}

// RegisterConnectionKey makes named connections of connector type typ
// found by the key f computes from their properties (the key under which
// the type's shared clients report to the connection registry). A type
// has one key function.
func (r *Registry) RegisterConnectionKey(typ string, f connection.KeyFunc) error {
	if typ == "" || f == nil {
		return fmt.Errorf("register connection key of %q: empty type or nil function", typ)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.keys[typ]; ok {
		return fmt.Errorf("register connection key of %q: already registered", typ)
	}
	r.keys[typ] = f
	if r.env.Connections != nil {
		return r.env.Connections.SetKeyFunc(typ, f)
	}
	return nil
}

// ConnectionKey returns the connection-key function of connector type
// typ, if it registered one.
func (r *Registry) ConnectionKey(typ string) (connection.KeyFunc, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.keys[typ]
	return f, ok
}
