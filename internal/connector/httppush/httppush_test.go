package httppush

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
)

type env struct {
	mux *connector.Mux
	srv *httptest.Server
	clk *clock.Virtual
	reg *connector.Registry
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{mux: connector.NewMux(), clk: clock.NewVirtual(0), reg: connector.NewRegistry()}
	if err := Register(e.reg); err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(e.mux)
	t.Cleanup(e.srv.Close)
	return e
}

func (e *env) source(t *testing.T, props map[string]any) api.Source {
	t.Helper()
	s, err := e.reg.NewSource(Type, props, connector.Deps{HTTP: e.mux, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func (e *env) send(method, path, body string) (int, error) {
	req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// sendAsync sends in the background and returns the status channel.
func (e *env) sendAsync(method, path, body string) <-chan int {
	ch := make(chan int, 1)
	go func() {
		code, err := e.send(method, path, body)
		if err != nil {
			code = -1
		}
		ch <- code
	}()
	return ch
}

func TestPush(t *testing.T) {
	tests := []struct {
		name     string
		props    map[string]any
		method   string
		wantCode int
		wantRead bool
	}{
		{"post", map[string]any{}, "POST", 200, true},
		{"put", map[string]any{"method": "put"}, "PUT", 200, true},
		{"wrong method", map[string]any{}, "PUT", 405, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			props := map[string]any{"datasource": "/api/data"}
			for k, v := range tc.props {
				props[k] = v
			}
			s := e.source(t, props)
			if err := s.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			code, err := e.send(tc.method, "/api/data", `{"a":1}`)
			if err != nil || code != tc.wantCode {
				t.Fatalf("status = %d, %v; want %d", code, err, tc.wantCode)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			m, err := s.Read(ctx)
			if !tc.wantRead {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("read = %v, %v; want nothing queued", m, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(m.Payload) != `{"a":1}` || m.Meta["method"] != tc.method || m.Meta["contentType"] != "application/json" {
				t.Fatalf("message = %q %v", m.Payload, m.Meta)
			}
		})
	}
}

func TestQueueFull(t *testing.T) {
	tests := []struct {
		name     string
		release  func(e *env, s api.Source)
		wantCode int
	}{
		{"read frees room", func(_ *env, s api.Source) { s.Read(context.Background()) }, 200},
		{"timeout answers 503", func(e *env, _ api.Source) {}, 503},
		{"close answers 503", func(_ *env, s api.Source) { s.Close(context.Background()) }, 503},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.source(t, map[string]any{"datasource": "/in", "bufferLength": 1, "queueTimeout": "2s"})
			if err := s.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			if code, _ := e.send("POST", "/in", "first"); code != 200 {
				t.Fatalf("first status %d", code)
			}
			ch := e.sendAsync("POST", "/in", "second")
			select {
			case code := <-ch:
				t.Fatalf("second request answered %d while the queue was full", code)
			case <-time.After(30 * time.Millisecond):
			}
			// The queue timeout is on the virtual clock: 1s is not enough.
			e.clk.AdvanceTo(1000, nil)
			select {
			case code := <-ch:
				t.Fatalf("second request answered %d before its timeout", code)
			case <-time.After(10 * time.Millisecond):
			}
			tc.release(e, s)
			deadline := time.After(5 * time.Second)
			for {
				select {
				case code := <-ch:
					if code != tc.wantCode {
						t.Fatalf("status = %d, want %d", code, tc.wantCode)
					}
					return
				case <-deadline:
					t.Fatal("request never answered")
				case <-time.After(2 * time.Millisecond):
					e.clk.AdvanceTo(e.clk.Now().UnixMilli()+500, nil)
				}
			}
		})
	}
}

func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	s := e.source(t, map[string]any{"datasource": "/x"})
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Run("duplicate path refused", func(t *testing.T) {
		other := e.source(t, map[string]any{"datasource": "/x"})
		if err := other.Connect(ctx); err == nil {
			t.Fatal("second source took the same path")
		}
	})
	t.Run("acknowledged records survive close", func(t *testing.T) {
		if code, _ := e.send("POST", "/x", "kept"); code != 200 {
			t.Fatalf("status %d", code)
		}
		s.Close(ctx)
		if code, _ := e.send("POST", "/x", "late"); code != 404 {
			t.Fatalf("status after close = %d, want 404", code)
		}
		m, err := s.Read(ctx)
		if err != nil || string(m.Payload) != "kept" {
			t.Fatalf("read = %v, %v", m, err)
		}
		if _, err := s.Read(ctx); !errors.Is(err, io.EOF) {
			t.Fatalf("read after close = %v, want io.EOF", err)
		}
	})
	t.Run("reconnect", func(t *testing.T) {
		if err := s.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		if code, _ := e.send("POST", "/x", "again"); code != 200 {
			t.Fatalf("status %d", code)
		}
		m, err := s.Read(ctx)
		if err != nil || string(m.Payload) != "again" {
			t.Fatalf("read = %v, %v", m, err)
		}
	})
}

func TestConfig(t *testing.T) {
	r := connector.NewRegistry()
	Register(r)
	deps := connector.Deps{HTTP: connector.NewMux(), Clock: clock.NewVirtual(0)}
	tests := []struct {
		name  string
		props map[string]any
		deps  connector.Deps
	}{
		{"no datasource", map[string]any{}, deps},
		{"relative path", map[string]any{"datasource": "api"}, deps},
		{"bad method", map[string]any{"datasource": "/a", "method": "GET"}, deps},
		{"no http server", map[string]any{"datasource": "/a"}, connector.Deps{Clock: clock.NewVirtual(0)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := r.NewSource(Type, tc.props, tc.deps); err == nil {
				t.Fatal("built")
			}
		})
	}
}

// TestTraceparentMeta: a request's W3C traceparent header reaches the
// record's metadata, where a traced rule continues the trace.
func TestTraceparentMeta(t *testing.T) {
	e := newEnv(t)
	s := e.source(t, map[string]any{"datasource": "/api/data"})
	if err := s.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, header := range []string{tp, ""} {
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/data", strings.NewReader(`{"a":1}`))
		req.Header.Set("Content-Type", "application/json")
		if header != "" {
			req.Header.Set("Traceparent", header)
		}
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		m, err := s.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := m.Meta["traceparent"]; (header == "" && ok) || (header != "" && got != header) {
			t.Errorf("header %q: meta traceparent %v", header, got)
		}
	}
}
