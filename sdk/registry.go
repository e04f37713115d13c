// Package sdk extends rekuiper without forking it: register sources, sinks,
// lookup sources and SQL functions on a Registry, then run the whole daemon
// with them: Run from your own code, or package kuiperd's Main as the whole
// main of a custom daemon, which `kuiper build` writes for you. Package
// sdktest checks connectors the way the built-in ones are checked.
//
// The contracts the extensions implement (api.Source, api.Sink, api.State,
// ...) are in package github.com/rekuiper/rekuiper/api; this package adds
// how they are registered and described. Nothing registers from init: an
// extension module exports a function
//
//	func Register(r *sdk.Registry) error
//
// and the custom daemon's main passes it to kuiperd.Main.
//
// Lifecycle of a connector: the engine validates the stream's or action's
// properties against the connector's Spec (types, defaults, enums, required
// properties; unknown properties are refused), calls the factory with the
// validated map, then Connect, Read/Write/Lookup, and Close (also after a
// failed Connect). Factories must not do I/O and must not start goroutines.
// The engine owns read loops, retries and restarts.
//
// A panic in a factory, a function or an argument check is turned into an
// error of the rule using it. Connectors should return errors, not panic.
package sdk

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/function"
)

// Deps is what a connector factory receives from the daemon.
type Deps struct {
	// Logger is scoped to the rule and the connector.
	Logger *slog.Logger
	// DataDir is the daemon's data folder; keep files under a folder named
	// after your connector.
	DataDir string
	// State is the rule's user state, part of its checkpoints. It is set
	// for sinks and for sources read by one rule only (qos >= 1), nil for
	// sources shared between rules.
	State api.State
}

// SourceFactory builds a source from validated properties.
type SourceFactory func(props map[string]any, deps Deps) (api.Source, error)

// SinkFactory builds a sink from validated properties.
type SinkFactory func(props map[string]any, deps Deps) (api.Sink, error)

// LookupSource serves lookup tables; see api.LookupSource for its
// contract.
type LookupSource = api.LookupSource

// LookupFactory builds a lookup source from validated properties.
type LookupFactory func(props map[string]any, deps Deps) (LookupSource, error)

// Registry holds the connector types and SQL functions of a daemon. The
// daemon's registry already holds every built-in, so registering a name
// that exists (case-insensitively) is an error, as are empty names, nil
// factories and invalid specs. Register functions run once, before the
// daemon serves; a Registry is not for use after that.
type Registry struct {
	conns *connector.Registry
	funcs *function.Registry
}

// NewRegistry returns a registry without built-ins, for testing an
// extension's Register function and its specs (see NewSource, NewSink).
func NewRegistry() *Registry {
	return &Registry{conns: connector.NewRegistry(), funcs: function.NewRegistry()}
}

// RegisterSource adds a source type: streams use it with TYPE="name".
func (r *Registry) RegisterSource(name string, spec Spec, f SourceFactory) error {
	if f == nil {
		return fmt.Errorf("register source %q: nil factory", name)
	}
	return r.conns.RegisterSource(name, spec.internal(), guarded(f, "source factory", name))
}

// RegisterSink adds a sink type: rules use it as an action {"name": {...}}.
func (r *Registry) RegisterSink(name string, spec Spec, f SinkFactory) error {
	if f == nil {
		return fmt.Errorf("register sink %q: nil factory", name)
	}
	return r.conns.RegisterSink(name, spec.internal(), guarded(f, "sink factory", name))
}

// RegisterLookup adds a lookup source type: tables use it with
// TYPE="name", KIND="lookup".
func (r *Registry) RegisterLookup(name string, spec Spec, f LookupFactory) error {
	if f == nil {
		return fmt.Errorf("register lookup %q: nil factory", name)
	}
	return r.conns.RegisterLookup(name, spec.internal(), guarded(f, "lookup factory", name))
}

// guarded adapts an extension's factory to the internal registry: it gets
// the public Deps, and a panic in it is its error (see recoverTo).
func guarded[C any](f func(map[string]any, Deps) (C, error), what, name string) func(map[string]any, connector.Deps) (C, error) {
	return func(p map[string]any, d connector.Deps) (c C, err error) {
		defer recoverTo(&err, what, name)
		return f(p, publicDeps(d))
	}
}

// NewSource validates props against the spec of source type name and calls
// its factory, as the engine does when a rule starts. deps.Logger may be
// nil. It lets an extension's tests check its spec and factory (package
// sdktest builds on it). A refused property makes an error wrapping
// ErrInvalidProps.
func (r *Registry) NewSource(name string, props map[string]any, deps Deps) (api.Source, error) {
	s, err := r.conns.NewSource(name, props, internalDeps(deps))
	return s, publicErr(err)
}

// NewSink is NewSource for sink types.
func (r *Registry) NewSink(name string, props map[string]any, deps Deps) (api.Sink, error) {
	s, err := r.conns.NewSink(name, props, internalDeps(deps))
	return s, publicErr(err)
}

// NewLookup is NewSource for lookup source types.
func (r *Registry) NewLookup(name string, props map[string]any, deps Deps) (api.LookupSource, error) {
	s, err := r.conns.NewLookup(name, props, internalDeps(deps))
	return s, publicErr(err)
}

func publicDeps(d connector.Deps) Deps {
	return Deps{Logger: d.Logger, DataDir: d.DataDir, State: d.State}
}

func internalDeps(d Deps) connector.Deps {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return connector.Deps{Logger: d.Logger, DataDir: d.DataDir, State: d.State}
}

// errPanic marks an extension that panicked.
var errPanic = errors.New("extension panicked")

func recoverTo(err *error, what, name string) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%s %s: %w: %v", what, name, errPanic, p)
	}
}
