// Package httppull provides the httppull source, which polls an HTTP
// endpoint at a fixed interval and emits each response body.
package httppull

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/httpclient"
	"github.com/rekuiper/rekuiper/internal/guard"
)

// Type is the connector type name.
const Type = "httppull"

// Spec is the httppull source's property spec.
func Spec() connector.Spec {
	return connector.Spec{Props: []connector.Prop{
		{Name: "url", Type: connector.TypeString, Required: true, Doc: "base URL; the stream's datasource is appended as a path"},
		{Name: "datasource", Type: connector.TypeString, Doc: "path appended to url"},
		{Name: "method", Type: connector.TypeString, Default: "GET", Enum: httpclient.Methods()},
		{Name: "interval", Type: connector.TypeDuration, Default: "10s", Doc: "time between two requests"},
		{Name: "timeout", Type: connector.TypeDuration, Default: "5s", Doc: "request timeout"},
		{Name: "body", Type: connector.TypeString, Doc: "request body"},
		{Name: "bodyType", Type: connector.TypeString, Enum: httpclient.BodyTypes(), Doc: "default none for GET, json otherwise"},
		{Name: "headers", Type: connector.TypeMap, Doc: "request headers"},
		{Name: "incremental", Type: connector.TypeBool, Default: false, Doc: "skip a response identical to the previous one"},
		{Name: "responseType", Type: connector.TypeString, Default: "code", Enum: httpclient.ResponseTypes(), Doc: "code: 2xx status is success; body: also a JSON body with code 200..299"},
		{Name: "insecureSkipVerify", Type: connector.TypeBool, Default: false},
	}}
}

// Register adds the httppull source and lookup source to r.
func Register(r *connector.Registry) error {
	if err := r.RegisterSource(Type, Spec(), New); err != nil {
		return err
	}
	return r.RegisterLookup(Type, LookupSpec(), NewLookup)
}

// Source requests url every interval on the clock (the first request one
// interval after Connect) and returns the response body as Payload, with
// meta "statusCode". A transport failure or a response failing the
// responseType check is returned as a Read error, so the engine reconnects
// with backoff; the source itself never retries. It starts no goroutine;
// Close releases idle connections. It is Rewindable for incremental mode:
// the offset holds a hash of the last emitted body.
type Source struct {
	url, method, bodyType, responseType string
	body                                []byte
	headers                             map[string]any
	interval, timeout                   time.Duration
	incremental, insecure               bool
	clk                                 clock.Clock

	guard    *guard.Guard
	client   *http.Client
	due      time.Time
	lastHash string
}

var (
	_ api.Source     = (*Source)(nil)
	_ api.Rewindable = (*Source)(nil)
)

// New builds an httppull source from validated props.
func New(props map[string]any, deps connector.Deps) (api.Source, error) {
	if deps.Clock == nil {
		return nil, errors.New("clock not available")
	}
	s := &Source{
		url:          httpclient.JoinURL(connector.Get[string](props, "url"), connector.Get[string](props, "datasource")),
		method:       connector.Get[string](props, "method"),
		bodyType:     connector.Get[string](props, "bodyType"),
		responseType: connector.Get[string](props, "responseType"),
		headers:      connector.Get[map[string]any](props, "headers"),
		interval:     connector.Get[time.Duration](props, "interval"),
		timeout:      connector.Get[time.Duration](props, "timeout"),
		incremental:  connector.Get[bool](props, "incremental"),
		insecure:     connector.Get[bool](props, "insecureSkipVerify"),
		clk:          deps.Clock,
		guard:        deps.Guard,
	}
	if b, ok := props["body"].(string); ok {
		s.body = []byte(b)
	}
	if s.bodyType == "" {
		s.bodyType = "json"
		if s.method == http.MethodGet {
			s.bodyType = "none"
		}
	}
	if _, err := http.NewRequest(s.method, s.url, nil); err != nil {
		return nil, fmt.Errorf("invalid url: %w", err)
	}
	if s.interval <= 0 {
		return nil, errors.New("interval must be positive")
	}
	return s, nil
}

// Connect creates the HTTP client and starts the schedule. It does not
// contact the server.
func (s *Source) Connect(context.Context) error {
	if s.client == nil {
		s.client = httpclient.NewClient(s.guard, s.timeout, s.insecure)
	}
	s.due = s.clk.Now().Add(s.interval)
	return nil
}

// Read waits for the next interval, requests the URL and returns the body.
// In incremental mode a body identical to the previous one is skipped and
// Read waits for the next interval.
func (s *Source) Read(ctx context.Context) (*api.Message, error) {
	if s.client == nil {
		return nil, errors.New("httppull source not connected")
	}
	for {
		if err := connector.WaitUntil(ctx, s.clk, s.due); err != nil {
			return nil, err
		}
		now := s.clk.Now()
		s.due = s.due.Add(s.interval)
		if s.due.Before(now) {
			s.due = now.Add(s.interval)
		}
		req, err := httpclient.NewRequest(ctx, s.method, s.url, s.bodyType, s.body, s.headers)
		if err != nil {
			return nil, err
		}
		code, body, err := httpclient.Do(s.client, req, s.responseType)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("pull %s: %w", s.url, err)
		}
		if s.incremental {
			sum := sha256.Sum256(body)
			h := hex.EncodeToString(sum[:])
			if h == s.lastHash {
				continue
			}
			s.lastHash = h
		}
		return &api.Message{Payload: body, Meta: map[string]any{"statusCode": int64(code)}, Time: now}, nil
	}
}

// Close releases idle connections.
func (s *Source) Close(context.Context) error {
	if s.client != nil {
		s.client.CloseIdleConnections()
		s.client = nil
	}
	return nil
}

type offset struct {
	V    int    `json:"v"`
	Hash string `json:"h,omitempty"`
}

// Offset returns {"v":1,"h":"<sha256 of the last emitted body>"}.
func (s *Source) Offset() ([]byte, error) {
	return json.Marshal(offset{V: 1, Hash: s.lastHash})
}

// Rewind restores the hash used by incremental mode.
func (s *Source) Rewind(b []byte) error {
	var o offset
	if err := connector.DecodeOffset("httppull", b, &o); err != nil {
		return err
	}
	s.lastHash = o.Hash
	return nil
}
