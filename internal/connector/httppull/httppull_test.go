package httppull

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
)

// server answers with the next of bodies (the last repeats) and records
// what it received.
type server struct {
	mu     sync.Mutex
	bodies []string
	status int
	reqs   []*http.Request
	got    []string
	// clock, when set, records the virtual time of each request in at: the
	// test keeps advancing the clock while the real request is in flight.
	clock *clock.Virtual
	at    []int64
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := io.ReadAll(r.Body)
	s.reqs = append(s.reqs, r)
	s.got = append(s.got, string(b))
	if s.clock != nil {
		s.at = append(s.at, s.clock.Now().UnixMilli())
	}
	body := s.bodies[0]
	if len(s.bodies) > 1 {
		s.bodies = s.bodies[1:]
	}
	if s.status != 0 {
		w.WriteHeader(s.status)
	}
	io.WriteString(w, body)
}

type result struct {
	m   *api.Message
	err error
}

// read runs one Read, advancing the virtual clock in 1s steps while Read
// waits on it, until it returns, and reports the clock reading then.
func read(t *testing.T, v *clock.Virtual, s api.Source) (*api.Message, int64, error) {
	t.Helper()
	ch := make(chan result, 1)
	go func() {
		m, err := s.Read(context.Background())
		ch <- result{m, err}
	}()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case r := <-ch:
			return r.m, v.Now().UnixMilli(), r.err
		case <-deadline:
			t.Fatal("read never returned")
		case <-time.After(2 * time.Millisecond):
			// Only while Read waits for its interval: a request in flight
			// must see the time its timer fired at.
			if v.Pending() > 0 {
				v.AdvanceTo(v.Now().UnixMilli()+1000, nil)
			}
		}
	}
}

func newSource(t *testing.T, v *clock.Virtual, props map[string]any) api.Source {
	t.Helper()
	return connectortest.OpenSource(t, Register, Type, props, connector.Deps{Clock: v})
}

func TestRequest(t *testing.T) {
	tests := []struct {
		name       string
		props      map[string]any
		wantMethod string
		wantPath   string
		wantCT     string
		wantBody   string
	}{
		{"get defaults", map[string]any{}, "GET", "/", "", ""},
		{"post json", map[string]any{"method": "post", "body": `{"q":1}`, "datasource": "/api/data"}, "POST", "/api/data", "application/json", `{"q":1}`},
		{"put text", map[string]any{"method": "PUT", "body": "hi", "bodyType": "text"}, "PUT", "/", "text/plain", "hi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := clock.NewVirtual(0)
			srv := &server{bodies: []string{`{"t":1}`}, clock: v}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			props := map[string]any{"url": ts.URL, "headers": map[string]any{"X-Token": "abc"}}
			for k, v := range tc.props {
				props[k] = v
			}
			s := newSource(t, v, props)
			m, _, err := read(t, v, s)
			if err != nil {
				t.Fatal(err)
			}
			if at := srv.at[0]; at != 10000 {
				t.Errorf("first request at %d ms, want 10000 (default interval)", at)
			}
			if string(m.Payload) != `{"t":1}` || m.Meta["statusCode"] != int64(200) {
				t.Errorf("message = %q %v", m.Payload, m.Meta)
			}
			r := srv.reqs[0]
			if r.Method != tc.wantMethod || r.URL.Path != tc.wantPath || r.Header.Get("Content-Type") != tc.wantCT ||
				r.Header.Get("X-Token") != "abc" || srv.got[0] != tc.wantBody {
				t.Errorf("request = %s %s ct=%q token=%q body=%q", r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("X-Token"), srv.got[0])
			}
		})
	}
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		props  map[string]any
	}{
		{"404", 404, "nope", nil},
		{"500", 500, "boom", nil},
		{"body code", 200, `{"code":400}`, map[string]any{"responseType": "body"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(&server{bodies: []string{tc.body}, status: tc.status})
			defer ts.Close()
			props := map[string]any{"url": ts.URL, "interval": "1s"}
			for k, v := range tc.props {
				props[k] = v
			}
			v := clock.NewVirtual(0)
			if _, _, err := read(t, v, newSource(t, v, props)); err == nil {
				t.Fatal("no error")
			}
		})
	}
	t.Run("server down", func(t *testing.T) {
		ts := httptest.NewServer(http.NotFoundHandler())
		url := ts.URL
		ts.Close()
		v := clock.NewVirtual(0)
		if _, _, err := read(t, v, newSource(t, v, map[string]any{"url": url, "interval": 1000})); err == nil {
			t.Fatal("no error")
		}
	})
}

func TestIncremental(t *testing.T) {
	v := clock.NewVirtual(0)
	srv := &server{bodies: []string{"a", "a", "a", "b", "b", "c"}, clock: v}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	s := newSource(t, v, map[string]any{"url": ts.URL, "interval": "1s", "incremental": true})
	want := []struct {
		body string
		at   int64
	}{{"a", 1000}, {"b", 4000}, {"c", 6000}}
	var off []byte
	for i, w := range want {
		m, _, err := read(t, v, s)
		if err != nil {
			t.Fatal(err)
		}
		srv.mu.Lock()
		at := srv.at[len(srv.at)-1] // the request that returned this body
		srv.mu.Unlock()
		if string(m.Payload) != w.body || at != w.at {
			t.Fatalf("read %d = %q at %d, want %q at %d", i, m.Payload, at, w.body, w.at)
		}
		if i == 0 {
			off, _ = s.(api.Rewindable).Offset()
		}
	}

	t.Run("rewind skips the recorded body", func(t *testing.T) {
		ts := httptest.NewServer(&server{bodies: []string{"a", "z"}})
		defer ts.Close()
		v := clock.NewVirtual(0)
		s := newSource(t, v, map[string]any{"url": ts.URL, "interval": "1s", "incremental": true})
		if err := s.(api.Rewindable).Rewind(off); err != nil {
			t.Fatal(err)
		}
		m, _, err := read(t, v, s)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload) != "z" {
			t.Fatalf("payload = %q, want the body after the recorded one", m.Payload)
		}
	})
	t.Run("bad offset", func(t *testing.T) {
		if err := s.(api.Rewindable).Rewind([]byte(`{"v":2}`)); err == nil || !strings.Contains(err.Error(), "version") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestConfig(t *testing.T) {
	r := connector.NewRegistry()
	Register(r)
	tests := []struct {
		name  string
		props map[string]any
	}{
		{"no url", map[string]any{}},
		{"bad method", map[string]any{"url": "http://x", "method": "PATCH"}},
		{"bad url", map[string]any{"url": "http://[::1"}},
		{"zero interval", map[string]any{"url": "http://x", "interval": 0}},
		{"bad bodyType", map[string]any{"url": "http://x", "bodyType": "yaml"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := r.NewSource(Type, tc.props, connector.Deps{Clock: clock.NewVirtual(0)}); err == nil {
				t.Fatal("built")
			}
		})
	}
}
