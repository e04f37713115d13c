package connector

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/value"
)

// Get returns the validated property name as T, or T's zero value when it is
// absent. Validate guarantees the type of declared properties, so a failed
// assertion means a spec/constructor mismatch and also yields the zero value.
func Get[T any](props map[string]any, name string) T {
	v, _ := props[name].(T)
	return v
}

// MatchKeys reports whether row has every field of keys with an equal value,
// compared by their text form (1 matches "1", as eKuiper's lookups do). A
// missing or null field matches nothing. Lookup sources that filter rows
// themselves (memory, httppull, simulator) use it.
func MatchKeys(row, keys map[string]any) bool {
	for k, want := range keys {
		got, ok := row[k]
		if !ok || got == nil || value.ToString(got) != value.ToString(want) {
			return false
		}
	}
	return true
}

// Wait blocks until d has passed on c or ctx is done, whichever is first; it
// returns ctx.Err() in the latter case. It never uses the wall clock
// directly, so virtual clocks drive it in tests.
func Wait(ctx context.Context, c clock.Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	fired := make(chan struct{})
	t := c.AfterFunc(d, func() { close(fired) })
	select {
	case <-fired:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

// WaitUntil blocks until c reads at least due, or ctx is done.
func WaitUntil(ctx context.Context, c clock.Clock, due time.Time) error {
	return Wait(ctx, c, due.Sub(c.Now()))
}

// Mux is an HTTPMux and http.Handler whose routes can be added and removed
// while it serves. Routes match the request path exactly. The daemon mounts
// it on its push-endpoint server. It is safe for concurrent use.
type Mux struct {
	mu     sync.RWMutex
	routes map[string]http.Handler
}

var _ HTTPMux = (*Mux)(nil)

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{routes: map[string]http.Handler{}} }

// Handle serves h at the exact path pattern, which must start with "/".
func (m *Mux) Handle(pattern string, h http.Handler) error {
	if !strings.HasPrefix(pattern, "/") {
		return fmt.Errorf("handle %q: path must start with /", pattern)
	}
	if h == nil {
		return fmt.Errorf("handle %q: nil handler", pattern)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.routes[pattern]; ok {
		return fmt.Errorf("handle %q: path already in use", pattern)
	}
	m.routes[pattern] = h
	return nil
}

// Unhandle removes the route at pattern.
func (m *Mux) Unhandle(pattern string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.routes, pattern)
}

// ServeHTTP dispatches to the route for r.URL.Path, or answers 404.
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.RLock()
	h := m.routes[r.URL.Path]
	m.mu.RUnlock()
	if h == nil {
		http.NotFound(w, r)
		return
	}
	h.ServeHTTP(w, r)
}

// DecodeOffset decodes a versioned JSON offset ({"v":1,...}) into dst, a
// pointer to a struct with the offset's fields. Offsets of another version
// are refused; kind names the connector in the error.
func DecodeOffset(kind string, b []byte, dst any) error {
	var v struct {
		V int `json:"v"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("decode %s offset: %w", kind, err)
	}
	if v.V != 1 {
		return fmt.Errorf("decode %s offset: unsupported version %d", kind, v.V)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return fmt.Errorf("decode %s offset: %w", kind, err)
	}
	return nil
}
