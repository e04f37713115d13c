package daemon

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/certs/certstest"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/netlimit"
	"github.com/rekuiper/rekuiper/internal/procs"
)

func pushConfig(t *testing.T) (*config.Config, string) {
	t.Helper()
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Source.HTTPServerPort = port
	return cfg, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

func TestPushServerListensOnDemand(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run("tls="+strconv.FormatBool(useTLS), func(t *testing.T) {
			cfg, addr := pushConfig(t)
			client := http.DefaultClient
			scheme := "http"
			if useTLS {
				pair := certstest.Write(t, t.TempDir(), "push", "push")
				cfg.Source.HTTPServerTLS = config.TLSFiles{Certfile: pair.Certfile, Keyfile: pair.Keyfile}
				client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pair.Pool}}}
				scheme = "https"
			}
			p, err := newPushServer(cfg, testPool(), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				t.Fatalf("%s accepts connections before any push endpoint exists", addr)
			}
			if err := p.Handle("/in", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "got") })); err != nil {
				t.Fatal(err)
			}
			resp, err := client.Get(scheme + "://" + addr + "/in")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(b) != "got" {
				t.Errorf("GET /in: %d %q", resp.StatusCode, b)
			}
			if useTLS {
				if resp, err := http.Get("http://" + addr + "/in"); err == nil {
					resp.Body.Close()
					if resp.StatusCode != http.StatusBadRequest {
						t.Errorf("plain HTTP to the TLS listener: %d", resp.StatusCode)
					}
				}
			}
		})
	}
}

func TestPushServerErrors(t *testing.T) {
	t.Run("missing tls file refuses to start", func(t *testing.T) {
		cfg, _ := pushConfig(t)
		missing := filepath.Join(t.TempDir(), "none.crt")
		cfg.Source.HTTPServerTLS = config.TLSFiles{Certfile: missing, Keyfile: missing}
		_, err := newPushServer(cfg, testPool(), slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), "source.httpServerTls") || !strings.Contains(err.Error(), "none.crt") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("port in use fails the endpoint", func(t *testing.T) {
		cfg, addr := pushConfig(t)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		p, err := newPushServer(cfg, testPool(), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		h := http.NotFoundHandler()
		if err := p.Handle("/a", h); err == nil || !strings.Contains(err.Error(), addr) {
			t.Errorf("error %v, want one naming %s", err, addr)
		}
		ln.Close()
		if err := p.Handle("/a", h); err != nil {
			t.Errorf("after the port was freed: %v", err)
		}
	})
}

// testPool is a connection budget that never gets in the way.
func testPool() *netlimit.Pool {
	return netlimit.NewPool(netlimit.Limits{MaxConnections: 1000, MaxPerAddress: 1000})
}
