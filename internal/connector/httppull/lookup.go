package httppull

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/httpclient"
	"github.com/rekuiper/rekuiper/internal/guard"
)

// LookupSpec is the httppull lookup source's property spec: the source's
// request properties, without the polling ones (interval, incremental).
func LookupSpec() connector.Spec {
	var props []connector.Prop
	for _, p := range Spec().Props {
		if p.Name != "interval" && p.Name != "incremental" {
			props = append(props, p)
		}
	}
	return connector.Spec{Props: props}
}

// Lookup serves a lookup table from an HTTP endpoint, as eKuiper's httppull
// lookup does: every lookup requests the URL, reads the body as a JSON
// object or array of objects, and returns the objects whose fields equal
// the keys (compared by their string form, so 1 and "1" match). Lookups are
// not cached here: the lookup join's cache (lookup.cache) saves requests.
// It is safe for concurrent use and starts no goroutine.
type Lookup struct {
	url, method, bodyType, responseType string
	body                                []byte
	headers                             map[string]any
	timeout                             time.Duration
	insecure                            bool

	guard  *guard.Guard
	mu     sync.Mutex
	client *http.Client
}

var _ connector.LookupSource = (*Lookup)(nil)

// NewLookup builds an httppull lookup source from validated props.
func NewLookup(props map[string]any, deps connector.Deps) (connector.LookupSource, error) {
	l := &Lookup{
		guard:        deps.Guard,
		url:          httpclient.JoinURL(connector.Get[string](props, "url"), connector.Get[string](props, "datasource")),
		method:       connector.Get[string](props, "method"),
		bodyType:     connector.Get[string](props, "bodyType"),
		responseType: connector.Get[string](props, "responseType"),
		headers:      connector.Get[map[string]any](props, "headers"),
		timeout:      connector.Get[time.Duration](props, "timeout"),
		insecure:     connector.Get[bool](props, "insecureSkipVerify"),
	}
	if b, ok := props["body"].(string); ok {
		l.body = []byte(b)
	}
	if l.bodyType == "" {
		l.bodyType = "json"
		if l.method == http.MethodGet {
			l.bodyType = "none"
		}
	}
	if _, err := http.NewRequest(l.method, l.url, nil); err != nil {
		return nil, fmt.Errorf("invalid url: %w", err)
	}
	return l, nil
}

// Connect creates the HTTP client. It does not contact the server.
func (l *Lookup) Connect(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.client == nil {
		l.client = httpclient.NewClient(l.guard, l.timeout, l.insecure)
	}
	return nil
}

// Lookup requests the URL and returns the rows of the body matching keys.
func (l *Lookup) Lookup(ctx context.Context, keys map[string]any) ([]map[string]any, error) {
	l.mu.Lock()
	client := l.client
	l.mu.Unlock()
	if client == nil {
		return nil, errors.New("httppull lookup not connected")
	}
	req, err := httpclient.NewRequest(ctx, l.method, l.url, l.bodyType, l.body, l.headers)
	if err != nil {
		return nil, err
	}
	_, body, err := httpclient.Do(client, req, l.responseType)
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %w", l.url, err)
	}
	rows, err := decodeRows(body)
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %w", l.url, err)
	}
	var out []map[string]any
	for _, r := range rows {
		if connector.MatchKeys(r, keys) {
			out = append(out, r)
		}
	}
	return out, nil
}

// decodeRows reads a JSON object (one row) or an array of objects.
func decodeRows(body []byte) ([]map[string]any, error) {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("response is not JSON: %w", err)
	}
	switch x := v.(type) {
	case map[string]any:
		return []map[string]any{x}, nil
	case []any:
		rows := make([]map[string]any, 0, len(x))
		for i, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("response element %d is a %T, not a JSON object", i, e)
			}
			rows = append(rows, m)
		}
		return rows, nil
	}
	return nil, fmt.Errorf("response is a %T, not a JSON object or array of objects", v)
}

// Close releases idle connections.
func (l *Lookup) Close(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.client != nil {
		l.client.CloseIdleConnections()
		l.client = nil
	}
	return nil
}
