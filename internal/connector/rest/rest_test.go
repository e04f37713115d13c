package rest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/conformancetest"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
	"github.com/rekuiper/rekuiper/internal/guard"
)

func newSink(t *testing.T, props map[string]any, deps connector.Deps) api.Sink {
	t.Helper()
	return connectortest.OpenSink(t, Register, Type, props, deps)
}

func TestRequest(t *testing.T) {
	tests := []struct {
		name       string
		props      map[string]any
		wantMethod string
		wantCT     string
		wantBody   string
	}{
		{"defaults", map[string]any{}, "POST", "application/json", `{"a":1}`},
		{"put text", map[string]any{"method": "put", "bodyType": "text"}, "PUT", "text/plain", `{"a":1}`},
		{"form", map[string]any{"bodyType": "form"}, "POST", "application/x-www-form-urlencoded", "a=1"},
		{"get none", map[string]any{"method": "GET", "bodyType": "none"}, "GET", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var method, ct, body, auth string
			ts := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				method, ct, body, auth = r.Method, r.Header.Get("Content-Type"), string(b), r.Header.Get("Authorization")
			}))
			defer ts.Close()
			props := map[string]any{"url": ts.URL, "headers": map[string]any{"Authorization": "Bearer t"}}
			for k, v := range tc.props {
				props[k] = v
			}
			s := newSink(t, props, connector.Deps{})
			if err := s.Write(context.Background(), &api.SinkMessage{Payload: []byte(`{"a":1}`)}); err != nil {
				t.Fatal(err)
			}
			if method != tc.wantMethod || ct != tc.wantCT || body != tc.wantBody || auth != "Bearer t" {
				t.Fatalf("got %s ct=%q body=%q auth=%q", method, ct, body, auth)
			}
		})
	}
}

func TestClassification(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      string
		props     map[string]any
		wantErr   bool
		retryable bool
	}{
		{"200", 200, "", nil, false, false},
		{"204", 204, "", nil, false, false},
		{"400 permanent", 400, "bad", nil, true, false},
		{"404 permanent", 404, "", nil, true, false},
		{"429 retryable", 429, "", nil, true, true},
		{"500 retryable", 500, "", nil, true, true},
		{"503 retryable", 503, "", nil, true, true},
		{"body code ok", 200, `{"code":200}`, map[string]any{"responseType": "body"}, false, false},
		{"body code 400", 200, `{"code":400}`, map[string]any{"responseType": "body"}, true, false},
		{"body code 503", 200, `{"code":503}`, map[string]any{"responseType": "body"}, true, true},
		{"body without code", 200, `{}`, map[string]any{"responseType": "body"}, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer ts.Close()
			props := map[string]any{"url": ts.URL}
			for k, v := range tc.props {
				props[k] = v
			}
			err := newSink(t, props, connector.Deps{}).Write(context.Background(), &api.SinkMessage{Payload: []byte("{}")})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if got := errors.Is(err, api.ErrRetryable); got != tc.retryable {
				t.Fatalf("retryable = %v, want %v (%v)", got, tc.retryable, err)
			}
		})
	}
}

// TestRefusedThen503Then200 follows a server through an outage: first
// nothing listens on the port, then it answers 503, then 200.
func TestRefusedThen503Then200(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := newSink(t, map[string]any{"url": "http://" + addr + "/in", "timeout": 2000}, connector.Deps{})
	msg := &api.SinkMessage{Payload: []byte(`{"n":1}`)}
	ctx := context.Background()

	conformancetest.CheckStatus(t, s, "connecting", "")
	err = s.Write(ctx, msg)
	if !errors.Is(err, api.ErrRetryable) {
		t.Fatalf("refused: err = %v, want retryable", err)
	}
	conformancetest.CheckStatus(t, s, "disconnected", "connection refused")

	l2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s taken meanwhile: %v", addr, err)
	}
	var calls atomic.Int32
	var got atomic.Value
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(r.Body)
		got.Store(string(b))
	}))
	ts.Listener.Close()
	ts.Listener = l2
	ts.Start()
	defer ts.Close()

	steps := []struct {
		name      string
		wantErr   bool
		retryable bool
	}{
		{"503", true, true},
		{"200", false, false},
	}
	for _, st := range steps {
		err := s.Write(ctx, msg)
		if (err != nil) != st.wantErr || errors.Is(err, api.ErrRetryable) != st.retryable {
			t.Fatalf("%s: err = %v", st.name, err)
		}
		// The server answered, even with 503: connected.
		conformancetest.CheckStatus(t, s, "connected", "")
	}
	if got.Load() != `{"n":1}` {
		t.Fatalf("server received %v", got.Load())
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	block := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer ts.Close()
	defer close(block)
	tests := []struct {
		name   string
		ctx    func() (context.Context, context.CancelFunc)
		wantIs error
	}{
		{"timeout", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, nil},
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSink(t, map[string]any{"url": ts.URL, "timeout": "50ms"}, connector.Deps{})
			ctx, cancel := tc.ctx()
			defer cancel()
			err := s.Write(ctx, &api.SinkMessage{Payload: []byte("{}")})
			if !errors.Is(err, api.ErrRetryable) {
				t.Fatalf("err = %v, want retryable", err)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Fatalf("err = %v, want %v", err, tc.wantIs)
			}
		})
	}
}

func TestDebugResp(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "pong")
	}))
	defer ts.Close()
	var buf bytes.Buffer
	s := newSink(t, map[string]any{"url": ts.URL, "debugResp": true}, connector.Deps{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err := s.Write(context.Background(), &api.SinkMessage{Payload: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"status=200", "body=pong"} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("log %q lacks %q", buf.String(), w)
		}
	}
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
		{"bad bodyType", map[string]any{"url": "http://x", "bodyType": "yaml"}},
		{"bad url", map[string]any{"url": "http://[::1"}},
		{"unknown prop", map[string]any{"url": "http://x", "retries": 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := r.NewSink(Type, tc.props, connector.Deps{}); err == nil {
				t.Fatal("built")
			}
		})
	}
	t.Run("engine props accepted", func(t *testing.T) {
		if _, err := r.NewSink(Type, map[string]any{"url": "http://x", "sendSingle": true, "enableCache": true, "resendInterval": "1s"}, connector.Deps{}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestPrivateNetGuard sends to a name that resolves to loopback: with
// enablePrivateNet false the dial is refused and the server never sees the
// request; with it true the request arrives.
func TestPrivateNetGuard(t *testing.T) {
	var hits atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer ts.Close()
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	props := map[string]any{"url": "http://localhost:" + port + "/x"}
	msg := &api.SinkMessage{Payload: []byte(`{"a":1}`)}

	s := newSink(t, props, connector.Deps{Guard: guard.New(guard.Policy{})})
	err := s.Write(context.Background(), msg)
	if !errors.Is(err, guard.ErrBlockedAddress) {
		t.Fatalf("write to localhost with enablePrivateNet false: %v, want ErrBlockedAddress", err)
	}
	if hits.Load() != 0 {
		t.Fatalf("the server got %d requests", hits.Load())
	}
	s = newSink(t, props, connector.Deps{Guard: guard.New(guard.Policy{AllowPrivateNet: true})})
	if err := s.Write(context.Background(), msg); err != nil {
		t.Fatalf("write with enablePrivateNet true: %v", err)
	}
	if hits.Load() != 1 {
		t.Fatalf("the server got %d requests, want 1", hits.Load())
	}
}
