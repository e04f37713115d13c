package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/auth"
	"github.com/rekuiper/rekuiper/internal/certs/certstest"
	"github.com/rekuiper/rekuiper/internal/procs"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// secDaemon is a kuiperd child started for the security suite.
type secDaemon struct {
	url string // base URL from the banner: http:// or https://
	out *procs.SyncBuffer
	hc  *http.Client
}

// newBase makes a daemon folder with the shipped etc/kuiper.yaml.
func newBase(t testing.TB) string {
	t.Helper()
	base := t.TempDir()
	shipped, err := os.ReadFile(filepath.Join("..", "..", "etc", "kuiper.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(base, "etc", "mgmt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "etc", "kuiper.yaml"), shipped, 0o644); err != nil {
		t.Fatal(err)
	}
	return base
}

// daemonEnv is the environment of a suite daemon: no KUIPER__ variables
// of the caller, an ephemeral REST port, the console log on stdout (where
// the test reads it), plus env.
func daemonEnv(env ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUIPER__") && !strings.HasPrefix(kv, "KuiperBaseKey=") {
			out = append(out, kv)
		}
	}
	out = append(out, "KUIPER__BASIC__RESTPORT=0", "KUIPER__BASIC__CONSOLELOG=true", "KUIPER__BASIC__FILELOG=false")
	return append(out, env...)
}

func command(bin, base string, env []string) *exec.Cmd {
	cmd := exec.Command(bin, folderArgs(base)...)
	cmd.Env = daemonEnv(env...)
	return cmd
}

// startSec runs bin over base and waits for its banner; hc talks to it
// (nil: a client without keep-alive, so every request opens a connection).
func startSec(t *testing.T, bin, base string, hc *http.Client, env ...string) *secDaemon {
	t.Helper()
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	}
	cmd := command(bin, base, env)
	var errOut procs.SyncBuffer
	cmd.Stderr = &errOut
	out := &procs.SyncBuffer{}
	url, err := launch(t, cmd, out)
	if err != nil {
		t.Fatalf("%v:\n%s%s", err, out.String(), errOut.String())
	}
	return &secDaemon{url: url, out: out, hc: hc}
}

// startFails runs bin over base, expects it to exit non-zero and returns
// its standard error.
func startFails(t *testing.T, bin, base string, env ...string) string {
	t.Helper()
	cmd := command(bin, base, env)
	var errOut procs.SyncBuffer
	cmd.Stderr = &errOut
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("kuiperd exited 0, want a refusal; stderr:\n%s", errOut.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill() //nolint:errcheck // the test failed
		<-done
		t.Fatalf("kuiperd started, want a refusal; stderr:\n%s", errOut.String())
	}
	return errOut.String()
}

// call sends a request and returns the status, the headers and the body.
func (d *secDaemon) call(t *testing.T, method, path, body string, header map[string]string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, d.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode >= 400 {
		var shape struct {
			Error   int    `json:"error"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(b, &shape); err != nil || shape.Error == 0 || shape.Message == "" {
			t.Errorf("%s %s: error body %q is not {error, message}", method, path, b)
		}
	}
	return resp.StatusCode, resp.Header, string(b)
}

// waitOutput reports whether the daemon's output holds want, waiting for
// lines written after a response was sent (the audit log is written once
// the handler returns).
func (d *secDaemon) waitOutput(want string) bool {
	return testwait.Poll(20*time.Second, func() bool { return strings.Contains(d.out.String(), want) })
}

var jsonCT = map[string]string{"Content-Type": "application/json"}

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func freeAddr(t *testing.T) (int, string) {
	t.Helper()
	p, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return p, net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
}

// TestSecuritySuite probes a real kuiperd as a client on the network
// would: default binds, authentication, HTTPS and cross-site requests.
func TestSecuritySuite(t *testing.T) {
	bin := buildDaemon(t)
	t.Run("defaults", func(t *testing.T) { testDefaults(t, bin) })
	t.Run("authentication", func(t *testing.T) { testAuthentication(t, bin) })
	t.Run("tls", func(t *testing.T) { testTLS(t, bin) })
	t.Run("cross-site", func(t *testing.T) { testCrossSite(t, bin) })
}

func testDefaults(t *testing.T, bin string) {
	t.Run("shipped configuration binds loopback", func(t *testing.T) {
		pushPort, pushAddr := freeAddr(t)
		pprofPort, pprofAddr := freeAddr(t)
		d := startSec(t, bin, newBase(t), nil,
			"KUIPER__SOURCE__HTTPSERVERPORT="+strconv.Itoa(pushPort), "KUIPER__BASIC__PPROFPORT="+strconv.Itoa(pprofPort))
		if !strings.HasPrefix(d.url, "http://127.0.0.1:") {
			t.Errorf("REST API on %s, want 127.0.0.1", d.url)
		}
		code, _, body := d.call(t, "GET", "/", "", nil)
		if code != 200 || strings.Contains(body, "warnings") {
			t.Errorf("GET / %d %s", code, body)
		}
		if listening(pprofAddr) {
			t.Errorf("pprof listens on %s in the shipped configuration", pprofAddr)
		}
		if listening(pushAddr) {
			t.Fatalf("the push endpoint server listens on %s before any stream needs it", pushAddr)
		}
		if code, _, body := d.call(t, "POST", "/streams", `{"sql":"CREATE STREAM pushed () WITH (TYPE=\"httppush\", DATASOURCE=\"/in\", FORMAT=\"json\")"}`, jsonCT); code != 201 {
			t.Fatalf("create stream: %d %s", code, body)
		}
		if code, _, body := d.call(t, "POST", "/rules", `{"id":"r","sql":"SELECT * FROM pushed","actions":[{"log":{}}]}`, jsonCT); code != 201 {
			t.Fatalf("create rule: %d %s", code, body)
		}
		if err := procs.WaitListening(pushAddr, 30*time.Second, nil); err != nil {
			t.Fatalf("push endpoint server not started by its stream: %v\n%s", err, d.out.String())
		}
		if !d.waitOutput("addr=" + pushAddr) {
			t.Errorf("push endpoint server not bound to %s:\n%s", pushAddr, d.out.String())
		}
	})
	t.Run("exposed REST API warns", func(t *testing.T) {
		d := startSec(t, bin, newBase(t), nil, "KUIPER__BASIC__RESTIP=0.0.0.0")
		code, _, body := d.call(t, "GET", "/", "", nil)
		var info struct {
			Warnings []string `json:"warnings"`
		}
		if err := json.Unmarshal([]byte(body), &info); err != nil || code != 200 {
			t.Fatalf("GET / %d %s", code, body)
		}
		if len(info.Warnings) != 1 || !strings.Contains(info.Warnings[0], "basic.authentication is off") {
			t.Errorf("GET / warnings %q", info.Warnings)
		}
		if !d.waitOutput("basic.authentication is off") {
			t.Errorf("no warning logged at start:\n%s", d.out.String())
		}
	})
	t.Run("pprof on a public address is refused", func(t *testing.T) {
		msg := startFails(t, bin, newBase(t), "KUIPER__BASIC__PPROF=true", "KUIPER__BASIC__PPROFIP=0.0.0.0")
		if !strings.Contains(msg, "basic.pprofIp") || !strings.Contains(msg, "loopback") {
			t.Errorf("refusal does not say why: %s", msg)
		}
	})
}

// writeKey writes a new RSA key's public half as <base>/etc/mgmt/<name>.
func writeKey(t testing.TB, base, name string) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "etc", "mgmt", name), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return k
}

func mustSign(t *testing.T, k *rsa.PrivateKey, o auth.SignOptions) string {
	t.Helper()
	s, err := auth.SignWithKey(k, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testAuthentication(t *testing.T, bin string) {
	base := newBase(t)
	ops := writeKey(t, base, "ops.pub")
	writeKey(t, base, "other.pub")
	stranger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	d := startSec(t, bin, base, nil, "KUIPER__BASIC__AUTHENTICATION=true", "KUIPER__BASIC__ENABLERESTAUDITLOG=true")
	now := time.Now()
	valid := mustSign(t, ops, auth.SignOptions{Issuer: "ops.pub", Subject: "alice", Expires: now.Add(time.Hour)})
	probes := []struct {
		name, header string
		want         int
		msg          string
	}{
		{"no token", "", 401, "missing token"},
		{"garbage", "garbage", 401, "invalid token"},
		{"expired", mustSign(t, ops, auth.SignOptions{Issuer: "ops.pub", Expires: now.Add(-time.Minute), Now: now.Add(-time.Hour)}), 401, "expired"},
		{"not yet valid", mustSign(t, ops, auth.SignOptions{Issuer: "ops.pub", Now: now.Add(time.Hour)}), 401, "not valid yet"},
		{"wrong audience", mustSign(t, ops, auth.SignOptions{Issuer: "ops.pub", Audience: []string{"someone"}}), 401, "audience"},
		{"wrong issuer", mustSign(t, ops, auth.SignOptions{Issuer: "other.pub"}), 401, "verification error"},
		{"unknown key file", mustSign(t, stranger, auth.SignOptions{Issuer: "stranger.pub"}), 401, "names no public key"},
		{"valid", valid, 200, ""},
		{"valid bearer", "Bearer " + valid, 200, ""},
	}
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			h := map[string]string{}
			if p.header != "" {
				h["Authorization"] = p.header
			}
			code, _, body := d.call(t, "GET", "/rules", "", h)
			if code != p.want || !strings.Contains(body, p.msg) {
				t.Errorf("GET /rules: %d %s, want %d naming %q", code, body, p.want, p.msg)
			}
		})
	}
	for _, path := range []string{"/", "/ping"} {
		if code, _, body := d.call(t, "GET", path, "", nil); code != 200 {
			t.Errorf("GET %s without a token: %d %s", path, code, body)
		}
	}
	if code, _, body := d.call(t, "POST", "/streams", `{"sql":"CREATE STREAM s () WITH (TYPE=\"memory\", DATASOURCE=\"t\")"}`, jsonCT); code != 401 {
		t.Errorf("POST /streams without a token: %d %s", code, body)
	}
	h := map[string]string{"Content-Type": "application/json", "Authorization": valid}
	if code, _, body := d.call(t, "POST", "/streams", `{"sql":"CREATE STREAM s () WITH (TYPE=\"memory\", DATASOURCE=\"t\")"}`, h); code != 201 {
		t.Errorf("POST /streams with a token: %d %s", code, body)
	}
	for _, want := range []string{
		`msg="rest audit" subject=- method=POST route=/streams status=401`,
		`msg="rest audit" subject=alice method=POST route=/streams status=201`,
	} {
		if !d.waitOutput(want) {
			t.Errorf("audit log lacks %q:\n%s", want, d.out.String())
		}
	}
	if log := d.out.String(); strings.Contains(log, valid) || strings.Contains(log, "CREATE STREAM") {
		t.Errorf("the log holds a token or a request body:\n%s", log)
	}

	t.Run("off", func(t *testing.T) {
		d := startSec(t, bin, newBase(t), nil)
		if code, _, body := d.call(t, "GET", "/rules", "", nil); code != 200 {
			t.Errorf("GET /rules without a token, authentication off: %d %s", code, body)
		}
	})
}

func tlsClient(pool *x509.CertPool, maxVersion uint16) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{RootCAs: pool, MaxVersion: maxVersion},
	}}
}

func testTLS(t *testing.T, bin string) {
	base := newBase(t)
	dir := t.TempDir()
	first := certstest.Write(t, dir, "rest", "first")
	env := []string{"KUIPER__BASIC__RESTTLS__CERTFILE=" + first.Certfile, "KUIPER__BASIC__RESTTLS__KEYFILE=" + first.Keyfile}
	d := startSec(t, bin, base, tlsClient(first.Pool, 0), env...)
	if !strings.HasPrefix(d.url, "https://127.0.0.1:") {
		t.Fatalf("banner address %s, want https", d.url)
	}
	resp, err := d.hc.Get(d.url + "/ping")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil || resp.TLS.PeerCertificates[0].Subject.CommonName != "first" {
		t.Fatalf("GET /ping over TLS: %d %+v", resp.StatusCode, resp.TLS)
	}

	t.Run("plain HTTP is unusable", func(t *testing.T) {
		plain := "http://" + strings.TrimPrefix(d.url, "https://")
		resp, err := http.Get(plain + "/rules")
		if err != nil {
			return // the connection was refused or closed: unusable
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(b), "[") {
			t.Errorf("plain GET /rules on the TLS port: %d %q", resp.StatusCode, b)
		}
	})
	t.Run("TLS 1.1 is refused", func(t *testing.T) {
		if resp, err := tlsClient(first.Pool, tls.VersionTLS11).Get(d.url + "/ping"); err == nil {
			resp.Body.Close()
			t.Error("a TLS 1.1 client was served")
		}
	})
	t.Run("certificate reload", func(t *testing.T) {
		second := certstest.Write(t, dir, "rest", "second")
		later := time.Now().Add(time.Minute)
		for _, f := range []string{second.Keyfile, second.Certfile} {
			if err := os.Chtimes(f, later, later); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := tlsClient(second.Pool, 0).Get(d.url + "/ping")
		if err != nil {
			t.Fatalf("after replacing the certificate: %v", err)
		}
		resp.Body.Close()
		if cn := resp.TLS.PeerCertificates[0].Subject.CommonName; cn != "second" {
			t.Errorf("serving %q after the files changed", cn)
		}
	})
	t.Run("missing file refuses to start", func(t *testing.T) {
		missing := filepath.Join(dir, "missing.crt")
		msg := startFails(t, bin, newBase(t), "KUIPER__BASIC__RESTTLS__CERTFILE="+missing, "KUIPER__BASIC__RESTTLS__KEYFILE="+first.Keyfile)
		if !strings.Contains(msg, "basic.restTls") || !strings.Contains(msg, missing) {
			t.Errorf("refusal does not name the setting and file: %s", msg)
		}
	})
	t.Run("half a pair refuses to start", func(t *testing.T) {
		msg := startFails(t, bin, newBase(t), "KUIPER__BASIC__RESTTLS__CERTFILE="+first.Certfile)
		if !strings.Contains(msg, "basic.restTls") || !strings.Contains(msg, "keyfile") {
			t.Errorf("refusal does not say what is missing: %s", msg)
		}
	})
}

func testCrossSite(t *testing.T, bin string) {
	d := startSec(t, bin, newBase(t), nil, "KUIPER__BASIC__CORS=https://console.example")
	host := strings.TrimPrefix(d.url, "http://")
	if code, _, body := d.call(t, "POST", "/streams", `{"sql":"CREATE STREAM keep () WITH (TYPE=\"memory\", DATASOURCE=\"t\")"}`, jsonCT); code != 201 {
		t.Fatalf("create stream: %d %s", code, body)
	}
	wipe := `{"content":"{}"}`
	probes := []struct {
		name, method, path, body string
		header                   map[string]string
		want                     int
		acao                     string
	}{
		{"import as text/plain", "POST", "/data/import", wipe, map[string]string{"Content-Type": "text/plain"}, 415, ""},
		{"import as a form", "POST", "/data/import", wipe, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, ""},
		{"import from a foreign origin", "POST", "/data/import", wipe, map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}, 403, ""},
		{"delete from a foreign origin", "DELETE", "/streams/keep", "", map[string]string{"Origin": "https://evil.example"}, 403, ""},
		{"read from a foreign origin", "GET", "/streams", "", map[string]string{"Origin": "https://evil.example"}, 403, ""},
		{"listed origin", "GET", "/streams", "", map[string]string{"Origin": "https://console.example"}, 200, "https://console.example"},
		{"listed origin preflight", "OPTIONS", "/data/import", "", map[string]string{"Origin": "https://console.example", "Access-Control-Request-Method": "POST"}, 204, "https://console.example"},
		{"foreign preflight", "OPTIONS", "/data/import", "", map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}, 403, ""},
		{"same origin", "GET", "/streams", "", map[string]string{"Origin": "http://" + host}, 200, ""},
	}
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			code, h, body := d.call(t, p.method, p.path, p.body, p.header)
			if code != p.want {
				t.Errorf("%s %s: %d %s, want %d", p.method, p.path, code, body, p.want)
			}
			if got := h.Get("Access-Control-Allow-Origin"); got != p.acao {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, p.acao)
			}
		})
	}
	code, _, body := d.call(t, "GET", "/streams", "", nil)
	if code != 200 || !strings.Contains(body, "keep") {
		t.Errorf("the refused requests changed the catalog: %d %s", code, body)
	}
}
