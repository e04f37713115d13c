// Package servertest starts the whole daemon in process, built by the
// daemon's own constructor (daemon.New) over a real SQLite catalog in a
// temporary folder, and serves its REST API with httptest: for tests that
// need the real engine behind the API (the web console's browser tests,
// the tap, the REST tests over the engine).
package servertest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rekuiper/rekuiper/internal/auth"
	"github.com/rekuiper/rekuiper/internal/auth/authtest"
	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/connector/membus"
	"github.com/rekuiper/rekuiper/internal/daemon"
	"github.com/rekuiper/rekuiper/internal/metrics"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/tap"
)

// Daemon is a running REST API over the engine.
type Daemon struct {
	// Daemon is the daemon itself, as daemon.New built it.
	Daemon *daemon.Daemon
	URL    string
	// Handler is the REST API itself, for tests that call it without
	// a connection (fuzzing).
	Handler http.Handler
	Catalog *catalog.Catalog
	Rules   *rulemgr.Manager
	// History is sampled only when the test calls History.Sample.
	History *metrics.History
	// Memory is the bus memory streams read and memory sinks write.
	Memory *membus.Bus
	// Taps carries the rules' emissions to GET /rules/{id}/tap.
	Taps *tap.Hub
	// Etc and Data are the etc and data folders (public keys go in
	// Etc/mgmt).
	Etc, Data string

	srv  *httptest.Server
	once sync.Once
}

// Options change the daemon started.
type Options struct {
	// Dir is the daemon's folder (etc/ and data/ below it); empty means a
	// new t.TempDir(). A test that restarts a daemon passes the same Dir.
	Dir string
	// Etc holds files written below etc/ before the start, by path
	// relative to it (e.g. "sources/simulator.yaml").
	Etc map[string]string
	// Config edits the configuration before anything starts (e.g.
	// Basic.Authentication).
	Config func(cfg *config.Config)
	// Store, when set, wraps the SQLite store before the daemon uses it
	// (a test that injects faults).
	Store func(catalog.Store) catalog.Store
}

// Start builds the daemon with daemon.New, loads the rules its catalog
// holds and serves its REST API; it stops at the test's end (or at
// Close). The push endpoint server listens on an ephemeral loopback port.
func Start(t testing.TB, o Options) *Daemon {
	t.Helper()
	ctx := context.Background()
	dir := o.Dir
	if dir == "" {
		dir = t.TempDir()
	}
	etc, data := filepath.Join(dir, "etc"), filepath.Join(dir, "data")
	for _, d := range []string{filepath.Join(etc, auth.KeyDir), data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range o.Etc {
		p := filepath.Join(etc, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Default()
	cfg.Paths = config.Paths{Etc: etc, Data: data}
	cfg.Source.HTTPServerIP, cfg.Source.HTTPServerPort = "127.0.0.1", 0
	if o.Config != nil {
		o.Config(cfg)
	}
	opts := daemon.Options{Logger: slog.New(slog.DiscardHandler)}
	if o.Store != nil {
		st, err := catalog.Open(ctx, cfg.SqlitePath(), catalog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		opts.Store = o.Store(st)
	}
	d, err := daemon.New(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Rules().Load(ctx); err != nil {
		d.Close(ctx) //nolint:errcheck // the load's error is the one to report
		t.Fatal(err)
	}
	s := &Daemon{
		Daemon: d, Handler: d.Handler(), Catalog: d.Catalog(), Rules: d.Rules(), History: d.History(),
		Memory: d.Memory(), Taps: d.Taps(), Etc: etc, Data: data,
	}
	s.srv = httptest.NewServer(d.Handler())
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// Close stops the REST API and the daemon (its rules, its catalog). It
// may be called more than once.
func (d *Daemon) Close() {
	d.once.Do(func() {
		d.srv.Close()
		d.Daemon.Close(context.Background()) //nolint:errcheck // test end
	})
}

// Token makes a new RSA key, writes its public half to Etc/mgmt and
// returns a token it signed (for a daemon with authentication on).
func (d *Daemon) Token(t testing.TB) string {
	t.Helper()
	key := authtest.NewKey(t)
	authtest.WritePublic(t, filepath.Join(d.Etc, auth.KeyDir), "servertest.pub", key)
	token, err := auth.SignWithKey(key, auth.SignOptions{Issuer: "servertest.pub", Subject: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// Publish sends one JSON row to a memory topic (what a memory stream
// with that DATASOURCE reads).
func (d *Daemon) Publish(t testing.TB, topic string, row map[string]any) {
	t.Helper()
	if err := d.Memory.Publish(context.Background(), membus.Message{Topic: topic, Data: row}); err != nil {
		t.Fatal(err)
	}
}

// Request sends a request to url with body (none when empty) and exactly
// the headers given, and returns the response, its body read and closed,
// with that body.
func Request(t testing.TB, method, url, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// RequestJSON is Request with a JSON body: Content-Type application/json
// when body is not empty, no other header.
func RequestJSON(t testing.TB, method, url, body string) (*http.Response, string) {
	t.Helper()
	var header map[string]string
	if body != "" {
		header = map[string]string{"Content-Type": "application/json"}
	}
	return Request(t, method, url, body, header)
}
