// Package tracing records rule data traces: when tracing is on for a rule,
// each record sampled at its source gets a span at every operator and sink
// it passes, with the record's data (secrets masked, size bounded) and the
// rule id as attributes. Spans go to a bounded in-memory store, served by
// the trace REST routes, and, when a collector is configured, to it over
// OTLP/HTTP.
//
// A Service is the daemon's, built once from the openTelemetry section of
// kuiper.yaml; each rule reads its switch (Rule) once per batch. The
// OpenTelemetry SDK is used through a provider of the Service's own, never
// the process-global one.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/config"
)

// Strategy says which records of a traced rule are sampled.
type Strategy string

const (
	// Always traces every record; a record that carries a W3C traceparent
	// (see Rule.Sample) continues that trace.
	Always Strategy = "always"
	// Head traces only records that carry a traceparent.
	Head Strategy = "head"
)

// ParseStrategy reads the strategy of POST /rules/{id}/trace/start; empty
// is Always, as in eKuiper.
func ParseStrategy(s string) (Strategy, error) {
	switch strings.ToLower(s) {
	case "", string(Always):
		return Always, nil
	case string(Head):
		return Head, nil
	}
	return "", fmt.Errorf("strategy %q: want \"always\" or \"head\"", s)
}

// Service owns the span pipeline: the SDK provider, the local store and,
// when configured, the OTLP exporter. Its methods are safe for concurrent
// use; a nil *Service traces nothing.
type Service struct {
	provider *sdktrace.TracerProvider
	tracer   oteltrace.Tracer
	store    *Store
	clock    clock.Clock

	mu    sync.Mutex
	rules map[string]*Rule
}

// Options configure a Service beyond kuiper.yaml.
type Options struct {
	Logger *slog.Logger
	Clock  clock.Clock
}

// New builds the Service of an openTelemetry section. With
// enableRemoteCollector, spans are also exported in batches to
// remoteEndpoint over OTLP/HTTP; an export that fails is logged and its
// spans dropped (a rule never waits for the collector).
func New(cfg config.OpenTelemetry, opts Options) (*Service, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Wall{}
	}
	if c := cfg.LocalTraceCapacity; c <= 0 || c > config.MaxLocalTraceCapacity {
		return nil, fmt.Errorf("openTelemetry.localTraceCapacity %d: must be from 1 to %d", c, config.MaxLocalTraceCapacity)
	}
	name := cfg.ServiceName
	if name == "" {
		name = config.Default().OpenTelemetry.ServiceName
	}
	s := &Service{store: NewStore(cfg.LocalTraceCapacity), clock: opts.Clock, rules: map[string]*Rule{}}
	popts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", name))),
		// Which records are traced is decided by the rule's strategy.
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(storeProcessor{s.store}),
	}
	if cfg.EnableRemoteCollector {
		eopts, err := collectorOptions(cfg)
		if err != nil {
			return nil, err
		}
		exp, err := otlptracehttp.New(context.Background(), eopts...)
		if err != nil {
			return nil, fmt.Errorf("openTelemetry.remoteEndpoint: %w", err)
		}
		popts = append(popts, sdktrace.WithBatcher(loggedExporter{exp, opts.Logger}))
	}
	s.provider = sdktrace.NewTracerProvider(popts...)
	s.tracer = s.provider.Tracer("github.com/rekuiper/rekuiper/internal/tracing")
	return s, nil
}

// collectorOptions are the exporter options of openTelemetry.remoteEndpoint.
func collectorOptions(cfg config.OpenTelemetry) ([]otlptracehttp.Option, error) {
	c, err := cfg.Collector()
	if err != nil {
		return nil, err
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(c.Host)}
	if c.Insecure {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	if c.Path != "" {
		opts = append(opts, otlptracehttp.WithURLPath(c.Path))
	}
	return opts, nil
}

// Shutdown ends the span pipeline, exporting what is queued within ctx.
func (s *Service) Shutdown(ctx context.Context) error {
	if s == nil {
		return nil
	}
	return s.provider.Shutdown(ctx)
}

// Flush exports the spans queued for the collector, within ctx.
func (s *Service) Flush(ctx context.Context) error {
	if s == nil {
		return nil
	}
	return s.provider.ForceFlush(ctx)
}

// Store is the local trace store the REST routes read.
func (s *Service) Store() *Store {
	if s == nil {
		return nil
	}
	return s.store
}

// Rule returns the tracing switch of rule id, off until Enable. The same
// switch is returned for the id until Forget.
func (s *Service) Rule(id string) *Rule {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rules[id]
	if r == nil {
		r = &Rule{svc: s, id: id}
		s.rules[id] = r
	}
	return r
}

// Enabled reports whether tracing is on for rule id.
func (s *Service) Enabled(id string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	r := s.rules[id]
	s.mu.Unlock()
	return r.On()
}

// Forget drops the switch of a deleted rule.
func (s *Service) Forget(id string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if r := s.rules[id]; r != nil {
		r.Disable()
		delete(s.rules, id)
	}
	s.mu.Unlock()
}

// Rule is one rule's tracing switch. The rule's runtime reads it with On
// (one atomic load) once per batch; a nil *Rule is always off.
type Rule struct {
	svc      *Service
	id       string
	strategy atomic.Pointer[Strategy]
}

// Enable turns tracing on with strategy st.
func (r *Rule) Enable(st Strategy) { r.strategy.Store(&st) }

// Disable turns tracing off; spans already open still end and are kept.
func (r *Rule) Disable() {
	if r != nil {
		r.strategy.Store(nil)
	}
}

// On reports whether tracing is on.
func (r *Rule) On() bool { return r != nil && r.strategy.Load() != nil }

// loggedExporter logs a failed export instead of reporting it to the
// OpenTelemetry global error handler.
type loggedExporter struct {
	sdktrace.SpanExporter
	logger *slog.Logger
}

func (e loggedExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := e.SpanExporter.ExportSpans(ctx, spans); err != nil && !errors.Is(err, context.Canceled) {
		e.logger.Warn("export trace spans to the collector", "spans", len(spans), "err", err)
	}
	return nil
}
