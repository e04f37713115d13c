package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/rulemgr/rulemgrtest"
	"github.com/rekuiper/rekuiper/internal/server"
)

// authDaemon serves the API with authentication on, over TLS when tls is
// set; it returns the address, the private key file matching etc/mgmt/cli.pub
// and, for TLS, a file with the server's certificate.
func authDaemon(t *testing.T, tls bool) (host, port, keyFile, caFile string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := catalog.Open(ctx, filepath.Join(dir, "sqliteKV.db"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	etc := filepath.Join(dir, "etc")
	if err := os.MkdirAll(filepath.Join(etc, "mgmt"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(etc, "mgmt", "cli.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
	keyFile = filepath.Join(dir, "cli.key")
	writeFile(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))

	cfg := config.Default()
	cfg.Paths = config.Paths{Etc: etc, Data: dir}
	cfg.Basic.Authentication = true
	mgr := rulemgr.New(rulemgr.Config{Catalog: cat, Runner: rulemgrtest.New()})
	h := server.New(server.Options{Catalog: cat, Rules: mgr, Config: cfg})
	var srv *httptest.Server
	if tls {
		srv = httptest.NewTLSServer(h)
		caFile = filepath.Join(dir, "ca.pem")
		writeFile(t, caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(func() {
		srv.Close()
		mgr.Close(ctx) //nolint:errcheck // test end
		st.Close()
	})
	u, _ := url.Parse(srv.URL)
	return u.Hostname(), u.Port(), keyFile, caFile
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func runCLI(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestTokenAndAuthenticatedCommands(t *testing.T) {
	host, port, keyFile, _ := authDaemon(t, false)
	code, tok, errOut := runCLI("token", "-key", keyFile, "-iss", "cli.pub", "-sub", "ci", "-exp", "10m")
	if code != 0 {
		t.Fatalf("kuiper token: %d %s", code, errOut)
	}
	tok = strings.TrimSpace(tok)
	if strings.Count(tok, ".") != 2 {
		t.Fatalf("not a JWT: %q", tok)
	}
	t.Setenv(TokenEnv, "")
	if code, _, errOut := runCLI("show", "streams", "-host", host, "-port", port); code != 1 || !strings.Contains(errOut, "missing token") || !strings.Contains(errOut, "401") {
		t.Errorf("without a token: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI("create", "stream", "demo", `() WITH (TYPE="memory", DATASOURCE="t")`, "-host", host, "-port", port, "-token", tok); code != 0 {
		t.Errorf("with -token: %d %s", code, errOut)
	}
	t.Setenv(TokenEnv, tok)
	if code, out, errOut := runCLI("show", "streams", "-host", host, "-port", port); code != 0 || !strings.Contains(out, "demo") {
		t.Errorf("with $%s: %d %q %s", TokenEnv, code, out, errOut)
	}
	_, wrongAud, _ := runCLI("token", "-key", keyFile, "-iss", "cli.pub", "-aud", "other")
	if code, _, errOut := runCLI("show", "streams", "-host", host, "-port", port, "-token", strings.TrimSpace(wrongAud)); code != 1 || !strings.Contains(errOut, "audience") {
		t.Errorf("token for another audience: %d %s", code, errOut)
	}
}

func TestTokenUsage(t *testing.T) {
	_, _, keyFile, _ := authDaemon(t, false)
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"token", "-iss", "cli.pub"}, 2, "usage"},
		{[]string{"token", "-key", keyFile}, 2, "usage"},
		{[]string{"token", "-key", keyFile, "-iss", "x.pub", "-exp", "-1h"}, 2, "usage"},
		{[]string{"token", "-key", filepath.Join(t.TempDir(), "none"), "-iss", "x.pub"}, 1, "read private key"},
		{[]string{"token", "-key", keyFile + "x", "-iss", "x.pub"}, 1, "no such file"},
	} {
		code, _, errOut := runCLI(tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.msg) {
			t.Errorf("%q: %d %s", tt.args, code, errOut)
		}
	}
	pub := filepath.Join(t.TempDir(), "pub.pem")
	writeFile(t, pub, []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"))
	if code, _, errOut := runCLI("token", "-key", pub, "-iss", "x.pub"); code != 1 || !strings.Contains(errOut, "private key") {
		t.Errorf("a public key as private key: %d %s", code, errOut)
	}
}

func TestHTTPSCommands(t *testing.T) {
	host, port, keyFile, caFile := authDaemon(t, true)
	_, tok, _ := runCLI("token", "-key", keyFile, "-iss", "cli.pub")
	tok = strings.TrimSpace(tok)
	t.Setenv(CACertEnv, "")
	if code, _, errOut := runCLI("show", "streams", "-host", host, "-port", port, "-token", tok); code != 1 {
		t.Errorf("plain HTTP to an HTTPS daemon: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI("show", "streams", "-host", host, "-port", port, "-token", tok, "-https"); code != 1 || !strings.Contains(errOut, "certificate") {
		t.Errorf("HTTPS without trusting the certificate: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI("show", "streams", "-host", host, "-port", port, "-token", tok, "-cacert", caFile); code != 0 {
		t.Errorf("-cacert: %d %s", code, errOut)
	}
	t.Setenv(CACertEnv, caFile)
	if code, _, errOut := runCLI("show", "streams", "-host", host, "-port", port, "-token", tok); code != 0 {
		t.Errorf("$%s: %d %s", CACertEnv, code, errOut)
	}
}
