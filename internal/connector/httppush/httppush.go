// Package httppush provides the httppush source: an endpoint on the
// daemon's shared HTTP server (Deps.HTTP) where clients POST or PUT records.
package httppush

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
)

// Type is the connector type name.
const Type = "httppush"

// MaxBody bounds the size of one pushed record.
const MaxBody = 32 << 20

// Spec is the httppush source's property spec.
func Spec() connector.Spec {
	return connector.Spec{Props: []connector.Prop{
		{Name: "datasource", Type: connector.TypeString, Required: true, Doc: "URL path of the endpoint, e.g. /api/data"},
		{Name: "method", Type: connector.TypeString, Default: "POST", Enum: []any{"POST", "PUT"}},
		{Name: "bufferLength", Type: connector.TypeInt, Default: 1024, Max: connector.MaxBufferLength, Doc: "records queued before requests wait"},
		{Name: "queueTimeout", Type: connector.TypeDuration, Default: "5s", Max: "1h", Doc: "how long a request waits for queue space before 503"},
	}}
}

// Register adds the httppush source to r.
func Register(r *connector.Registry) error {
	return r.RegisterSource(Type, Spec(), New)
}

// Source queues each request body as one Message (Payload, with meta
// "method", "path" and "contentType"). The HTTP server owns the handler
// goroutines; each answers 200 once its record is queued, or 503 when the
// queue stays full for queueTimeout or the source closes, so a record is
// never dropped silently. Connect registers the endpoint; Close unregisters
// it and must be called.
type Source struct {
	path, method string
	queueTimeout time.Duration
	mux          connector.HTTPMux
	clk          clock.Clock

	queue chan *api.Message

	mu       sync.Mutex
	closed   chan struct{} // closed by Close; replaced by a later Connect
	handling bool
}

var _ api.Source = (*Source)(nil)

// New builds an httppush source from validated props.
func New(props map[string]any, deps connector.Deps) (api.Source, error) {
	if deps.HTTP == nil {
		return nil, errors.New("http server not available")
	}
	if deps.Clock == nil {
		return nil, errors.New("clock not available")
	}
	path := connector.Get[string](props, "datasource")
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("datasource %q must be a URL path starting with /", path)
	}
	n := connector.Get[int64](props, "bufferLength")
	if n < 1 {
		n = 1
	}
	return &Source{
		path:         path,
		method:       connector.Get[string](props, "method"),
		queueTimeout: connector.Get[time.Duration](props, "queueTimeout"),
		mux:          deps.HTTP,
		clk:          deps.Clock,
		queue:        make(chan *api.Message, n),
		closed:       make(chan struct{}),
	}, nil
}

// Connect registers the endpoint. It may be called again after Close.
func (s *Source) Connect(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handling {
		return nil
	}
	select {
	case <-s.closed:
		s.closed = make(chan struct{})
	default:
	}
	if err := s.mux.Handle(s.path, http.HandlerFunc(s.serve)); err != nil {
		return fmt.Errorf("register endpoint %s: %w", s.path, err)
	}
	s.handling = true
	return nil
}

func (s *Source) done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Source) serve(w http.ResponseWriter, r *http.Request) {
	closed := s.done()
	if r.Method != s.method {
		w.Header().Set("Allow", s.method)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	msg := &api.Message{
		Payload: body,
		Meta: map[string]any{
			"method":      r.Method,
			"path":        r.URL.Path,
			"contentType": r.Header.Get("Content-Type"),
		},
		Time: s.clk.Now(),
	}
	if tp := r.Header.Get("traceparent"); tp != "" {
		// A W3C trace context: a traced rule continues the trace.
		msg.Meta["traceparent"] = tp
	}
	select {
	case s.queue <- msg:
		w.WriteHeader(http.StatusOK)
		return
	case <-closed:
		http.Error(w, "source closed", http.StatusServiceUnavailable)
		return
	default:
	}
	timedOut := make(chan struct{})
	t := s.clk.AfterFunc(s.queueTimeout, func() { close(timedOut) })
	defer t.Stop()
	select {
	case s.queue <- msg:
		w.WriteHeader(http.StatusOK)
	case <-timedOut:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "queue full", http.StatusServiceUnavailable)
	case <-closed:
		http.Error(w, "source closed", http.StatusServiceUnavailable)
	case <-r.Context().Done():
	}
}

// Read returns the next queued record, blocking until one arrives or ctx is
// done. After Close it returns io.EOF once the queue is drained.
func (s *Source) Read(ctx context.Context) (*api.Message, error) {
	select {
	case m := <-s.queue:
		return m, nil
	default:
	}
	select {
	case m := <-s.queue:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.done():
		return nil, io.EOF
	}
}

// Close unregisters the endpoint and answers 503 to requests still waiting
// for queue space. Records already acknowledged stay queued and readable
// (also after a later Connect). Idempotent.
func (s *Source) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handling {
		s.mux.Unhandle(s.path)
		s.handling = false
	}
	select {
	case <-s.closed:
	default:
		close(s.closed)
	}
	return nil
}
