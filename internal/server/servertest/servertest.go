// Package servertest starts kuiperd's REST API over the real engine and a
// real SQLite catalog in a temporary folder, for tests that need the
// whole daemon in process (the web console's browser tests, the tap).
package servertest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/rekuiper/rekuiper/internal/auth"
	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/connector/membus"
	"github.com/rekuiper/rekuiper/internal/daemon"
	"github.com/rekuiper/rekuiper/internal/metrics"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/server"
	"github.com/rekuiper/rekuiper/internal/tap"
)

// Daemon is a running REST API over the engine.
type Daemon struct {
	URL     string
	Catalog *catalog.Catalog
	Rules   *rulemgr.Manager
	// History is sampled only when the test calls History.Sample.
	History *metrics.History
	// Memory is the bus memory streams read and memory sinks write.
	Memory *membus.Bus
	// Taps carries the rules' emissions to GET /rules/{id}/tap.
	Taps *tap.Hub
	// Etc is the etc folder (public keys go in Etc/mgmt).
	Etc string
}

// Options change the daemon started.
type Options struct {
	// Config edits the configuration before anything starts (e.g.
	// Basic.Authentication).
	Config func(cfg *config.Config)
}

// Start starts a daemon whose folders live in t.TempDir(); it stops at
// the test's end.
func Start(t testing.TB, o Options) *Daemon {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	etc, data := filepath.Join(dir, "etc"), filepath.Join(dir, "data")
	for _, d := range []string{filepath.Join(etc, auth.KeyDir), data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	st, err := catalog.Open(ctx, filepath.Join(data, "sqliteKV.db"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Paths = config.Paths{Etc: etc, Data: data}
	cfg.Source.HTTPServerIP, cfg.Source.HTTPServerPort = "127.0.0.1", 0
	if o.Config != nil {
		o.Config(cfg)
	}
	logger := slog.New(slog.DiscardHandler)
	runner, release, err := daemon.NewRunner(cfg, cat, logger)
	if err != nil {
		t.Fatal(err)
	}
	d := runner.(*daemon.Runner)
	mgr := rulemgr.New(rulemgr.Config{Catalog: cat, Runner: runner, Logger: logger})
	hist := metrics.NewHistory(metrics.HistoryConfig{Rules: mgr})
	srv := httptest.NewServer(server.New(server.Options{
		Catalog: cat, Rules: mgr, Config: cfg, Logger: logger, Connections: d.Connections(),
		Connectors: d.ConnectorRegistry(), Functions: d.FunctionRegistry(), Memory: d.MemoryBus(),
		Streams: d, Taps: d.TapHub(), History: hist,
	}))
	t.Cleanup(func() {
		srv.Close()
		mgr.Close(context.Background()) //nolint:errcheck // test end
		release()
		st.Close()
	})
	return &Daemon{URL: srv.URL, Catalog: cat, Rules: mgr, History: hist, Memory: d.MemoryBus(), Taps: d.TapHub(), Etc: etc}
}

// Token makes a new RSA key, writes its public half to Etc/mgmt and
// returns a token it signed (for a daemon with authentication on).
func (d *Daemon) Token(t testing.TB) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	if err := os.WriteFile(filepath.Join(d.Etc, auth.KeyDir, "servertest.pub"), pub, 0o600); err != nil {
		t.Fatal(err)
	}
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
