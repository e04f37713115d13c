// Package rest provides the rest sink, which sends each result to an HTTP
// endpoint.
package rest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/connector/httpclient"
	"github.com/rekuiper/rekuiper/internal/guard"
)

// Type is the connector type name.
const Type = "rest"

// Spec is the rest sink's property spec.
func Spec() connector.Spec {
	return connector.Spec{Props: []connector.Prop{
		{Name: "url", Type: connector.TypeString, Required: true},
		{Name: "method", Type: connector.TypeString, Default: "POST", Enum: httpclient.Methods()},
		{Name: "bodyType", Type: connector.TypeString, Default: "json", Enum: httpclient.BodyTypes()},
		{Name: "headers", Type: connector.TypeMap, Doc: "request headers"},
		{Name: "timeout", Type: connector.TypeDuration, Default: "5s", Doc: "request timeout (numbers are milliseconds)"},
		{Name: "insecureSkipVerify", Type: connector.TypeBool, Default: false},
		{Name: "debugResp", Type: connector.TypeBool, Default: false, Doc: "log each response status and body at info level"},
		{Name: "responseType", Type: connector.TypeString, Default: "code", Enum: httpclient.ResponseTypes(), Doc: "code: 2xx status is success; body: also a JSON body with code 200..299"},
	}}
}

// Register adds the rest sink to r.
func Register(r *connector.Registry) error {
	return r.RegisterSink(Type, Spec(), New)
}

// Sink sends SinkMessage.Payload in one request per Write. Failure classes:
// transport errors (connection refused or reset, timeouts) and 5xx, 408 and
// 429 responses are retryable (api.ErrRetryable), so the sink cache keeps
// the message; other non-2xx responses and (responseType body) a body
// without a code field are permanent. A Write cut short by ctx is also
// retryable, since nothing was delivered. The sink itself never retries.
// ctx bounds one Write. It starts no goroutine; Close releases idle
// connections.
type Sink struct {
	url, method, bodyType, responseType string
	headers                             map[string]any
	timeout                             time.Duration
	insecure, debug                     bool
	logger                              *slog.Logger
	client                              *http.Client
	guard                               *guard.Guard
	// link is the sink's connection status: connected once a request got
	// an answer, disconnected with the error when one got none.
	link *connection.Link
}

var _ api.Sink = (*Sink)(nil)

// New builds a rest sink from validated props.
func New(props map[string]any, deps connector.Deps) (api.Sink, error) {
	s := &Sink{
		url:          connector.Get[string](props, "url"),
		method:       connector.Get[string](props, "method"),
		bodyType:     connector.Get[string](props, "bodyType"),
		responseType: connector.Get[string](props, "responseType"),
		headers:      connector.Get[map[string]any](props, "headers"),
		timeout:      connector.Get[time.Duration](props, "timeout"),
		insecure:     connector.Get[bool](props, "insecureSkipVerify"),
		debug:        connector.Get[bool](props, "debugResp"),
		logger:       deps.Logger,
		guard:        deps.Guard,
		link:         connection.NewLink(deps.Clock),
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if _, err := http.NewRequest(s.method, s.url, nil); err != nil {
		return nil, fmt.Errorf("invalid url: %w", err)
	}
	return s, nil
}

// Connect creates the HTTP client; it does not contact the server.
func (s *Sink) Connect(context.Context) error {
	if s.client == nil {
		s.client = httpclient.NewClient(s.guard, s.timeout, s.insecure)
	}
	return nil
}

// Write sends msg.Payload as the request body.
func (s *Sink) Write(ctx context.Context, msg *api.SinkMessage) error {
	if s.client == nil {
		return errors.New("rest sink not connected")
	}
	req, err := httpclient.NewRequest(ctx, s.method, s.url, s.bodyType, msg.Payload, s.headers)
	if err != nil {
		return err
	}
	code, body, err := httpclient.Do(s.client, req, s.responseType)
	if code != 0 {
		s.link.Connected()
	} else if err != nil && ctx.Err() == nil {
		s.link.Failed(fmt.Errorf("send to %s: %w", s.url, err))
	}
	if s.debug && code != 0 {
		s.logger.LogAttrs(ctx, slog.LevelInfo, "rest sink response",
			slog.String("url", s.url), slog.Int("status", code), slog.String("body", string(body)))
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		// Not delivered: let the sink cache keep it across the stop.
		return api.Retryable(fmt.Errorf("send to %s: %w", s.url, ctx.Err()))
	}
	err = fmt.Errorf("send to %s: %w", s.url, err)
	var se *httpclient.StatusError
	switch {
	case errors.As(err, &se):
		if se.Transient() {
			return api.Retryable(err)
		}
		return err
	case errors.Is(err, httpclient.ErrNoCode), errors.Is(err, guard.ErrBlockedAddress):
		return err // retrying cannot help
	}
	return api.Retryable(err)
}

// Status reports the connection status (stream.ConnStatus): connecting
// until the first request, then whether the last request reached the
// server, with the error of the last that did not.
func (s *Sink) Status() (state string, lastConnected, lastDisconnected time.Time, lastErr string) {
	return s.link.Status()
}

// Close releases idle connections.
func (s *Sink) Close(context.Context) error {
	if s.client != nil {
		s.client.CloseIdleConnections()
		s.client = nil
	}
	return nil
}
