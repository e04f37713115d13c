package certs_test

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/certs"
	"github.com/rekuiper/rekuiper/internal/certs/certstest"
)

// serve accepts TLS connections on loopback until the test ends.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				c.(*tls.Conn).Handshake() //nolint:errcheck // the client reports
				c.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

// served returns the certificate the server at addr presents.
func served(t *testing.T, addr string, max uint16) (*tls.ConnectionState, error) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: max}) //nolint:gosec // inspecting the served certificate
	if err != nil {
		return nil, err
	}
	defer c.Close()
	st := c.ConnectionState()
	return &st, nil
}

func TestReloaderServesNewFiles(t *testing.T) {
	dir := t.TempDir()
	first := certstest.Write(t, dir, "srv", "first")
	r, err := certs.NewReloader(first.Certfile, first.Keyfile, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, r.Config())
	st, err := served(t, addr, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cn := st.PeerCertificates[0].Subject.CommonName; cn != "first" {
		t.Fatalf("serving %q", cn)
	}
	second := certstest.Write(t, dir, "srv", "second")
	// The same size and a modification time within the file system's
	// granularity would hide the change; move the time on to be sure.
	later := time.Now().Add(time.Minute)
	for _, f := range []string{second.Keyfile, second.Certfile} {
		if err := os.Chtimes(f, later, later); err != nil {
			t.Fatal(err)
		}
	}
	st, err = served(t, addr, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cn := st.PeerCertificates[0].Subject.CommonName; cn != "second" {
		t.Errorf("after the files changed, serving %q", cn)
	}

	if err := os.WriteFile(second.Certfile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err = served(t, addr, 0)
	if err != nil {
		t.Fatalf("a broken file took the listener down: %v", err)
	}
	if cn := st.PeerCertificates[0].Subject.CommonName; cn != "second" {
		t.Errorf("after a broken write, serving %q", cn)
	}
}

func TestReloaderRefusesOldTLS(t *testing.T) {
	p := certstest.Write(t, t.TempDir(), "srv", "x")
	r, err := certs.NewReloader(p.Certfile, p.Keyfile, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, r.Config())
	if _, err := served(t, addr, tls.VersionTLS11); err == nil {
		t.Error("a TLS 1.1 handshake succeeded")
	}
	st, err := served(t, addr, tls.VersionTLS12)
	if err != nil || st.Version != tls.VersionTLS12 {
		t.Errorf("TLS 1.2: %v", err)
	}
}

func TestNewReloaderErrors(t *testing.T) {
	dir := t.TempDir()
	p := certstest.Write(t, dir, "srv", "x")
	other := certstest.Write(t, dir, "other", "y")
	unreadable := filepath.Join(dir, "unreadable.key")
	if err := os.WriteFile(unreadable, []byte("x"), 0o000); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, cert, key string
		want            []string
	}{
		{"missing cert", filepath.Join(dir, "none.crt"), p.Keyfile, []string{"none.crt", "no such file"}},
		{"missing key", p.Certfile, filepath.Join(dir, "none.key"), []string{"none.key", "no such file"}},
		{"mismatched pair", p.Certfile, other.Keyfile, []string{"srv.crt", "other.key"}},
		{"not pem", p.Certfile, unreadable, []string{"unreadable.key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := certs.NewReloader(tt.cert, tt.key, nil)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}
