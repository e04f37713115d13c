// Package connector holds the registry of source, sink and lookup connector
// types and what connectors receive from the daemon (Deps). Each built-in
// connector lives in its own sub-package and registers itself explicitly
// with a Register(r *Registry) error function, listed in package builtin;
// nothing registers from init. A connector type that shares clients
// between its sources and sinks (MQTT) builds them from the registry's Env
// and hands their release to OnClose; one whose clients can be named
// connections registers its RegisterConnectionKey.
//
// Lifecycle: the engine validates properties against the connector's Spec,
// calls the factory with the validated map, then Connect, Read/Write or
// Lookup, and Close (also after a failed Connect). Factories must not do I/O
// and must not start goroutines.
package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/connector/membus"
	"github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/rule"
)

// ErrUnknownType is returned for a connector type that is not registered.
var ErrUnknownType = errors.New("unknown connector type")

// Deps is what connectors may use from the daemon. Factories receive it by
// value; nil fields mean the daemon does not offer that facility, and a
// connector that needs it fails in its factory or Connect.
type Deps struct {
	// Logger is scoped to the rule and connector by the caller.
	Logger *slog.Logger
	// Clock is the only source of time for pacing (intervals, timers).
	Clock clock.Clock
	// Memory is the daemon's in-process pub/sub bus for memory topics.
	Memory *membus.Bus
	// HTTP is the daemon's shared HTTP server for push endpoints.
	HTTP HTTPMux
	// DataDir is the daemon's data directory (eKuiper's "data" folder).
	DataDir string
	// Connections shares clients between connectors with the same
	// connection settings and collects their status for GET /connections.
	// Nil: every connector has its own client and reports nothing.
	Connections *connection.Registry
	// Guard decides which paths a client may name and which addresses
	// outbound HTTP clients may dial (basic.allowExternalFileAccess,
	// basic.enablePrivateNet). The daemon always sets it; nil allows
	// everything (unit tests that run a connector directly).
	Guard *guard.Guard
	// State is the rule's user state, included in its checkpoints. It is
	// set for sinks and for sources read by one rule only (qos >= 1); nil
	// for sources shared between rules.
	State api.State
	// SessionID is a stable name for what a source has read, set for a
	// source read by one rule at qos >= 1: it is derived from the node
	// (the daemon's data folder identity), the rule and the stream, and is
	// the same after a restart. A connector whose server can keep the
	// position for a named client (an MQTT persistent session) uses it
	// when the user configured no identity of their own. Empty otherwise.
	SessionID string
	// AESKey is basic.aesKey decoded (nil when unset), for sinks that
	// encrypt their own byte stream (the file sink).
	AESKey []byte
}

// SessionEnder is implemented by sources that keep a session on their
// server under a name derived from Deps.SessionID (an MQTT persistent
// session). When the rule is deleted the engine builds the source again
// with the same Deps.SessionID and calls EndSession, so the server stops
// keeping (and queueing for) a session nobody will resume. The source is
// not connected; ctx bounds the call.
type SessionEnder interface {
	EndSession(ctx context.Context) error
}

// Transactional is implemented by sinks that take part in the
// checkpoint's commit (the kafka and sql sinks given a transactionalID);
// their package documentation gives the protocol.
type Transactional interface {
	// PreCommit makes everything written before the barrier of checkpointID
	// ready to commit (flushed to the destination, not yet visible).
	PreCommit(ctx context.Context, checkpointID uint64) error
	// Commit makes checkpointID's writes visible; call it only after the
	// checkpoint is durable.
	Commit(ctx context.Context, checkpointID uint64) error
	// Abort discards what was written since the last Commit.
	Abort(ctx context.Context) error
}

// HTTPMux lets push sources serve endpoints on the daemon's HTTP server.
type HTTPMux interface {
	// Handle serves h at the exact path pattern. It fails if the pattern is
	// already handled.
	Handle(pattern string, h http.Handler) error
	// Unhandle removes the handler at pattern; unknown patterns are ignored.
	Unhandle(pattern string)
}

// SourceFactory builds a source from validated properties. It must not do
// I/O; Connect does.
type SourceFactory func(props map[string]any, deps Deps) (api.Source, error)

// SinkFactory builds a sink from validated properties. It must not do I/O.
type SinkFactory func(props map[string]any, deps Deps) (api.Sink, error)

// LookupFactory builds a lookup source from validated properties.
type LookupFactory func(props map[string]any, deps Deps) (LookupSource, error)

// LookupSource is the public lookup contract (see api.LookupSource).
type LookupSource = api.LookupSource

// Entry is one registered connector type.
type Entry[F any] struct {
	Name string
	Spec Spec
	New  F
}

// Registry maps connector type names to factories and property specs. It is
// safe for concurrent use. Create one per daemon with NewRegistry.
type Registry struct {
	env     Env
	mu      sync.RWMutex
	sources map[string]Entry[SourceFactory]
	sinks   map[string]Entry[SinkFactory]
	lookups map[string]Entry[LookupFactory]
	keys    map[string]connection.KeyFunc
	closers []func() error
}

// NewRegistry returns an empty registry whose connectors get a zero Env
// (a discarding logger, the wall clock, no connection registry).
func NewRegistry() *Registry { return NewRegistryWith(Env{}) }

// NewRegistryWith returns an empty registry whose connectors build what
// they share from env.
func NewRegistryWith(env Env) *Registry {
	if env.Logger == nil {
		env.Logger = slog.New(slog.DiscardHandler)
	}
	if env.Clock == nil {
		env.Clock = clock.Wall{}
	}
	return &Registry{
		env:     env,
		sources: map[string]Entry[SourceFactory]{},
		sinks:   map[string]Entry[SinkFactory]{},
		lookups: map[string]Entry[LookupFactory]{},
		keys:    map[string]connection.KeyFunc{},
	}
}

// RegisterSource adds a source type. It refuses an empty name, a nil
// factory, an invalid spec and a name already registered as a source
// (names compare case-insensitively).
func (r *Registry) RegisterSource(name string, spec Spec, f SourceFactory) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return register(r.sources, KindSource, name, spec, f, f == nil)
}

// RegisterSink adds a sink type, with the same rules as RegisterSource.
func (r *Registry) RegisterSink(name string, spec Spec, f SinkFactory) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return register(r.sinks, KindSink, name, spec, f, f == nil)
}

// RegisterLookup adds a lookup source type, with the same rules as
// RegisterSource.
func (r *Registry) RegisterLookup(name string, spec Spec, f LookupFactory) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return register(r.lookups, KindLookup, name, spec, f, f == nil)
}

func register[F any](m map[string]Entry[F], k Kind, name string, spec Spec, f F, nilFactory bool) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("register %s: empty name", k)
	}
	if nilFactory {
		return fmt.Errorf("register %s %q: nil factory", k, name)
	}
	if _, ok := find(m, name); ok {
		return fmt.Errorf("register %s %q: already registered", k, name)
	}
	spec.Props = slices.Clone(spec.Props)
	for i := range spec.Props {
		spec.Props[i].Enum = slices.Clone(spec.Props[i].Enum)
	}
	spec.Kind = k
	if err := spec.check(); err != nil {
		return fmt.Errorf("register %s %q: %w", k, name, err)
	}
	for _, p := range spec.Props {
		if p.Secret {
			rule.RegisterSecretKey(name, p.Name)
		}
	}
	m[name] = Entry[F]{Name: name, Spec: spec, New: f}
	return nil
}

func find[F any](m map[string]Entry[F], name string) (Entry[F], bool) {
	if e, ok := m[name]; ok {
		return e, true
	}
	for k, e := range m {
		if strings.EqualFold(k, name) {
			return e, true
		}
	}
	return Entry[F]{}, false
}

// Source returns the source type name (matched case-insensitively).
func (r *Registry) Source(name string) (Entry[SourceFactory], bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return find(r.sources, name)
}

// Sink returns the sink type name (matched case-insensitively).
func (r *Registry) Sink(name string) (Entry[SinkFactory], bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return find(r.sinks, name)
}

// Lookup returns the lookup type name (matched case-insensitively).
func (r *Registry) Lookup(name string) (Entry[LookupFactory], bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return find(r.lookups, name)
}

// Names returns the registered type names of kind k, sorted.
func (r *Registry) Names(k Kind) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	switch k {
	case KindSource:
		return slices.Sorted(maps.Keys(r.sources))
	case KindSink:
		return slices.Sorted(maps.Keys(r.sinks))
	case KindLookup:
		return slices.Sorted(maps.Keys(r.lookups))
	}
	return nil
}

// Spec returns the property spec of type name of kind k.
func (r *Registry) Spec(k Kind, name string) (Spec, error) {
	var (
		s  Spec
		ok bool
	)
	switch k {
	case KindSource:
		var e Entry[SourceFactory]
		e, ok = r.Source(name)
		s = e.Spec
	case KindSink:
		var e Entry[SinkFactory]
		e, ok = r.Sink(name)
		s = e.Spec
	case KindLookup:
		var e Entry[LookupFactory]
		e, ok = r.Lookup(name)
		s = e.Spec
	}
	if !ok {
		return Spec{}, fmt.Errorf("%w: %s %q", ErrUnknownType, k, name)
	}
	return s, nil
}

// Mask masks the secret properties of type name of kind k; for an unknown
// type it masks nothing.
func (r *Registry) Mask(k Kind, name string, props map[string]any) map[string]any {
	s, err := r.Spec(k, name)
	if err != nil {
		return maps.Clone(props)
	}
	return s.Mask(props)
}

// NewSource validates props and builds a source of type name.
func (r *Registry) NewSource(name string, props map[string]any, deps Deps) (api.Source, error) {
	e, ok := r.Source(name)
	if !ok {
		return nil, fmt.Errorf("%w: source %q", ErrUnknownType, name)
	}
	v, err := e.Spec.Validate(props)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", e.Name, err)
	}
	s, err := e.New(v, deps)
	if err != nil {
		return nil, fmt.Errorf("create source %s: %w", e.Name, err)
	}
	return s, nil
}

// NewSink validates props and builds a sink of type name.
func (r *Registry) NewSink(name string, props map[string]any, deps Deps) (api.Sink, error) {
	e, ok := r.Sink(name)
	if !ok {
		return nil, fmt.Errorf("%w: sink %q", ErrUnknownType, name)
	}
	v, err := e.Spec.Validate(props)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", e.Name, err)
	}
	s, err := e.New(v, deps)
	if err != nil {
		return nil, fmt.Errorf("create sink %s: %w", e.Name, err)
	}
	return s, nil
}

// NewLookup validates props and builds a lookup source of type name.
func (r *Registry) NewLookup(name string, props map[string]any, deps Deps) (LookupSource, error) {
	e, ok := r.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w: lookup %q", ErrUnknownType, name)
	}
	v, err := e.Spec.Validate(props)
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %w", e.Name, err)
	}
	s, err := e.New(v, deps)
	if err != nil {
		return nil, fmt.Errorf("create lookup %s: %w", e.Name, err)
	}
	return s, nil
}
